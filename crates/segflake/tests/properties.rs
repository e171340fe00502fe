//! Property tests: codecs round-trip and sort like numbers; layouts compose/decode
//! losslessly; the obfuscator is a bijection that stays below 2^63.

use proptest::prelude::*;
use segflake::codec::{parse_base32, parse_base62, parse_decimal};
use segflake::{FieldOrder, Format, LayoutSpec, Obfuscator};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn codecs_round_trip(id in any::<u64>()) {
        for f in Format::ALL {
            prop_assert_eq!(f.parse(&f.encode(id)).unwrap(), id);
        }
    }

    #[test]
    fn fixed_width_text_sorts_like_numbers(a in any::<u64>(), b in any::<u64>()) {
        for f in [Format::Base62, Format::Base32] {
            prop_assert_eq!(f.encode(a).cmp(&f.encode(b)), a.cmp(&b));
        }
    }

    #[test]
    fn parsers_never_panic_and_accept_only_canonical_lengths(text in "\\PC{0,24}") {
        let _ = parse_decimal(&text);
        if parse_base62(&text).is_ok() {
            prop_assert_eq!(text.chars().count(), 11);
        }
        if parse_base32(&text).is_ok() {
            prop_assert_eq!(text.chars().count(), 13);
        }
    }

    #[test]
    fn layouts_compose_and_decode_losslessly(
        time_bits in 30u8..=41, worker_bits in 0u8..=10, sequence_bits in 0u8..=12,
        tick in any::<u64>(), worker in any::<u64>(), seq in any::<u64>(), sony in any::<bool>(),
        datacenter_bits in 0u8..=10,
    ) {
        let spec = LayoutSpec::default().with_time_bits(time_bits).with_worker_bits(worker_bits).with_sequence_bits(sequence_bits).with_tick_ms(1).with_epoch_ms(0).with_datacenter_bits(datacenter_bits.min(worker_bits)).with_order(if sony { FieldOrder::TimeSequenceWorker } else { FieldOrder::TimeWorkerSequence }).with_min_lifetime_years(0);
        let l = spec.build_at(1_790_000_000_000).unwrap();
        let (tick, worker, seq) = (tick & l.max_tick(), worker & l.max_worker_id(), seq & l.max_sequence());
        let id = l.compose(tick, worker, seq).unwrap();
        prop_assert!(id <= l.max_id());
        let d = l.decode(id).unwrap();
        // With a datacenter field, the worker field reads back as its two parts.
        let field = l.worker_field(d.datacenter_id, d.worker_id).unwrap();
        prop_assert_eq!((d.tick, field, d.sequence), (tick, worker, seq));
        prop_assert_eq!(d.datacenter_id.is_some(), l.datacenter_bits() > 0);
    }

    #[test]
    fn obfuscation_is_a_bijection_below_2_63(key in any::<[u8; 16]>(), id in 0u64..(1 << 63)) {
        let o = Obfuscator::new(key);
        let x = o.obfuscate(id).unwrap();
        prop_assert!(x < 1 << 63);
        prop_assert_eq!(o.deobfuscate(x).unwrap(), id);
    }
}
