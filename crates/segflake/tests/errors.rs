//! Every error's data ([`Error::details`]) is declared by its kind
//! ([`ErrorKind::detail_fields`]), name and kind alike, and every declared field is carried
//! by some error of that kind: the generated declarations (Python's exception attributes)
//! list exactly what the bindings set.
use segflake::error::DetailKind;
use segflake::{Error, ErrorKind};
use std::collections::BTreeSet;

/// One error of every variant that carries data (and one of those that carry none).
fn one_of_each() -> Vec<Error> {
    vec![
        Error::InvalidLayout { reason: "r".into() },
        Error::LayoutExhausted {
            exhausts_at_ms: 1,
            min_lifetime_years: 2,
            checked_at_ms: 3,
        },
        Error::WorkerIdOutOfRange {
            worker_id: 1024,
            worker_bits: 10,
        },
        Error::ClockMovedBackwards {
            by_ms: 5,
            max_drift_ms: 2,
        },
        Error::ClockBeforeEpoch {
            now_ms: 1,
            epoch_ms: 2,
        },
        Error::TimeExhausted { exhausts_at_ms: 9 },
        Error::invalid_argument("x", "bad"),
        Error::Parse {
            format: "base62",
            reason: "r".into(),
        },
        Error::StoreContractViolation {
            tag: "t".into(),
            reason: "r".into(),
        },
        Error::SegmentsExhausted {
            tag: "t".into(),
            cause: "c".into(),
        },
        Error::Store {
            message: "m".into(),
        },
        Error::SerialExhausted {
            second: "s".into(),
            sequence_digits: 4,
        },
        Error::Closed,
        Error::NoFreeWorkerId {
            capacity: 8,
            held: 8,
            waited_ms: 10,
            lost_worker_id: None,
        },
        Error::LeaseExpired {
            worker_id: 3,
            reason: "r".into(),
        },
        Error::ClockBehindMark {
            worker_id: 3,
            mark_ms: 10,
            now_ms: 5,
            max_drift_ms: 2,
            waited_ms: 1,
        },
        Error::ClockSkew {
            now_ms: 1,
            median_ms: 2,
            peers: 3,
            max_peer_skew_ms: 4,
        },
        Error::CounterClockSkew {
            second: 1,
            server_ms: 2,
            max_behind_ms: 3,
            max_ahead_ms: 4,
        },
        Error::Registry {
            message: "m".into(),
        },
        Error::UnknownTag { tag: "t".into() },
        Error::RegistryLostData {
            worker_id: 3,
            detail: "d".into(),
        },
        Error::LeafNodeAlive {
            identity: "10.0.0.1:80".into(),
            worker_id: 3,
        },
        Error::ClockStalled {
            reading_ms: 1,
            waiting_for_ms: 2,
            stalled_for: "3 ms".into(),
        },
    ]
}

#[test]
fn every_error_carries_exactly_the_fields_its_kind_declares() {
    let errors = one_of_each();
    for kind in ErrorKind::ALL {
        let declared: BTreeSet<(&str, DetailKind)> = kind.detail_fields().iter().copied().collect();
        let mut carried = BTreeSet::new();
        for e in errors.iter().filter(|e| e.kind() == kind) {
            for (name, detail) in e.details() {
                assert!(
                    declared.contains(&(name, detail.kind())),
                    "{e:?} carries {name} ({:?}), which {kind:?}.detail_fields() does not declare",
                    detail.kind()
                );
                carried.insert((name, detail.kind()));
            }
        }
        assert!(
            errors.iter().any(|e| e.kind() == kind),
            "no sample error of kind {kind:?}"
        );
        assert_eq!(carried, declared, "{kind:?}: the fields its errors carry");
    }
}

mod quoting {
    use proptest::prelude::*;
    use segflake::error::{quoted, quoted_char, shows_as_is};

    proptest! {
        /// On ASCII text, messages quote as `{:?}` does (the vectors' messages stay as they were).
        #[test]
        fn ascii_is_quoted_as_debug(s in "[\\x00-\\x7f]{0,40}") {
            prop_assert_eq!(quoted(&s).to_string(), format!("{s:?}"));
            for c in s.chars() {
                prop_assert_eq!(quoted_char(c).to_string(), format!("{c:?}"));
            }
        }

        /// Whatever a string holds, its quoted form shows no invisible character and names
        /// each one as `\u{hex}`: a character is written as it is only if it shows.
        #[test]
        fn no_invisible_character_is_written_as_it_is(s in any::<String>()) {
            let q = quoted(&s).to_string();
            prop_assert!(q.starts_with('"') && q.ends_with('"') && q.len() >= 2);
            prop_assert!(q.chars().all(shows_as_is), "{:?}", q);
        }
    }

    #[test]
    fn text_in_other_scripts_reads_as_typed_and_invisibles_are_named() {
        assert_eq!(quoted("订单-é").to_string(), "\"订单-é\"");
        assert_eq!(quoted("a\u{200b}b").to_string(), "\"a\\u{200b}b\"");
        assert_eq!(
            quoted("\u{feff}x\u{a0}").to_string(),
            "\"\\u{feff}x\\u{a0}\""
        );
        assert_eq!(quoted("rtl\u{202e}").to_string(), "\"rtl\\u{202e}\"");
        assert_eq!(quoted("tab\there").to_string(), "\"tab\\there\"");
        assert_eq!(quoted_char('\'').to_string(), "'\\''");
        assert_eq!(quoted_char('"').to_string(), "'\"'");
        assert_eq!(quoted_char('\u{85}').to_string(), "'\\u{85}'");
        // Each of these is what `{:?}` writes too.
        for s in [
            "a\u{200b}b",
            "\u{feff}",
            "x\u{a0}",
            "\u{2028}",
            "\u{e000}",
            "\u{e0001}",
        ] {
            assert_eq!(quoted(s).to_string(), format!("{s:?}"), "{s:?}");
        }
    }
}
