use super::*;
use crate::layout::{DecodedId, Layout, Preset};
use crate::segment::SegmentOptions;

fn pairs(p: &[(&str, Value)]) -> Vec<(String, Value)> {
    p.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

#[test]
fn refusals_name_the_option_as_the_user_spelled_it() {
    let e = configure::<SegmentOptions, _>(
        pairs(&[("step", Value::Int(9)), ("maxStep", Value::Int(5))]),
        Dialect::JS,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid step: 9 is out of range; allowed 1..=5 (maxStep)"
    );
    let e = configure::<SegmentOptions, _>(pairs(&[("max_step", Value::Int(0))]), Dialect::PYTHON)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid max_step: got 0; allowed integers 1..=9223372036854775807"
    );
    let e = configure::<SegmentOptions, _>(pairs(&[("max-step", Value::Int(0))]), Dialect::CLI)
        .unwrap_err();
    assert!(
        e.to_string().starts_with("invalid --max-step: got 0;"),
        "{e}"
    );
}

#[test]
fn unknown_keys_list_the_allowed_ones_and_suggest_a_spelling() {
    let e = configure::<SegmentOptions, _>(pairs(&[("max_step", Value::Int(5))]), Dialect::JS)
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("unknown option \"max_step\" (did you mean maxStep?)"),
        "{text}"
    );
    assert!(
        !text.contains("fetchThreads"),
        "JS has no fetch threads: {text}"
    );
    let e = configure::<SegmentOptions, _>(
        pairs(&[("fetch_threads", Value::Int(2))]),
        Dialect::PYTHON_ASYNC,
    )
    .unwrap_err();
    assert!(e.to_string().contains("unknown option \"fetch_threads\""));
}

#[test]
fn kinds_are_checked_before_ranges() {
    let spec = &SegmentOptions::SPECS[0];
    for (v, why) in [
        (Value::Float(1.5), "got the number 1.5, not an integer"),
        (Value::Str("5".into()), "got the string \"5\""),
        (Value::Bool(true), "got the boolean true"),
        (Value::Opaque("a function".into()), "got a function"),
        (Value::Int(-1), "got -1"),
    ] {
        let e = check(spec, &v, Dialect::PYTHON).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid step: {why}; allowed integers 1..=9223372036854775807")
        );
    }
}

#[test]
fn null_keeps_the_default_and_step_alone_raises_max_step() {
    let o: SegmentOptions = configure(
        pairs(&[
            ("step", Value::Int(2_000_000)),
            ("dynamic_step", Value::Null),
        ]),
        Dialect::PYTHON,
    )
    .unwrap();
    assert_eq!(
        (o.step, o.max_step, o.dynamic_step),
        (2_000_000, 2_000_000, true)
    );
}

/// hutool's `Snowflake(workerId = 5, dataCenterId = 1)` as options: the generator's
/// worker field is 1 << 5 | 5; a datacenter needs a layout with a datacenter field.
#[test]
fn datacenter_and_worker_make_the_worker_field() {
    let c: SnowflakeConfig = configure(
        pairs(&[
            ("datacenterId", Value::Int(1)),
            ("workerId", Value::Int(5)),
            ("layout", Value::Str("twitter-dc".into())),
        ]),
        Dialect::JS,
    )
    .unwrap();
    assert_eq!((c.options.worker_id, c.datacenter_id), (37, Some(1)));
    let settings = spelled_settings(&c, Spelling::Camel);
    assert_eq!(settings[0], ("workerId".into(), Value::uint(5)));
    assert_eq!(settings[1], ("datacenterId".into(), Value::uint(1)));
    let refused = |items: &[(&str, Value)]| {
        configure::<SnowflakeConfig, _>(pairs(items), Dialect::JS)
            .unwrap_err()
            .to_string()
    };
    let e = refused(&[("datacenterId", Value::Int(1)), ("workerId", Value::Int(5))]);
    assert!(
        e.contains("datacenterId") && e.contains("no datacenter field"),
        "{e}"
    );
    let e = refused(&[
        ("layout", Value::Str("twitter-dc".into())),
        ("datacenterId", Value::Int(32)),
        ("workerId", Value::Int(5)),
    ]);
    assert!(e.contains("datacenterId") && e.contains("0..=31"), "{e}");
    let e = refused(&[
        ("layout", Value::Str("twitter-dc".into())),
        ("datacenterId", Value::Int(0)),
        ("workerId", Value::Int(32)),
    ]);
    assert!(e.contains("workerId") && e.contains("0..=31"), "{e}");
}

#[test]
fn layouts_come_from_presets_or_maps_in_any_key_order() {
    let c: SnowflakeConfig = configure(
        pairs(&[
            ("workerId", Value::Int(3)),
            (
                "layout",
                Value::Map(pairs(&[
                    ("workerBits", Value::Int(16)),
                    ("preset", Value::Str("sonyflake".into())),
                ])),
            ),
            ("epochMs", Value::Str("2025-01-01".into())),
        ]),
        Dialect::JS,
    )
    .unwrap();
    assert_eq!(c.layout.worker_bits, 16);
    assert_eq!(c.layout.tick_ms, 10);
    assert_eq!(c.layout.epoch_ms, 1_735_689_600_000);
    let e = configure::<SnowflakeConfig, _>(
        pairs(&[("layout", Value::Str("leaf".into()))]),
        Dialect::JS,
    )
    .unwrap_err();
    assert!(e.to_string().contains("\"leaf\" is not a preset"), "{e}");
    let e = configure::<SnowflakeConfig, _>(pairs(&[]), Dialect::JS).unwrap_err();
    assert!(
        e.to_string().starts_with("invalid workerId: is required"),
        "{e}"
    );
}

#[test]
fn cross_field_layout_errors_are_respelled() {
    let c: SnowflakeConfig = configure(
        pairs(&[
            ("workerId", Value::Int(0)),
            (
                "layout",
                Value::Map(pairs(&[
                    ("timeBits", Value::Int(50)),
                    ("workerBits", Value::Int(10)),
                ])),
            ),
        ]),
        Dialect::JS,
    )
    .unwrap();
    let e = c.build_at(1_800_000_000_000, Spelling::Camel).unwrap_err();
    assert!(
        e.to_string()
            .contains("timeBits + workerBits + sequenceBits = 50+10+12"),
        "{e}"
    );
}

#[test]
fn records_list_one_value_per_field() {
    let layout = Layout::preset(Preset::Twitter).unwrap();
    assert_eq!(layout.values().len(), Layout::FIELDS.len());
    assert_eq!(
        record_value(&layout, "maxWorkerId"),
        Some(Value::uint(1023))
    );
    let d = layout.decode(1 << 22).unwrap();
    assert_eq!(d.values().len(), DecodedId::FIELDS.len());
}

#[test]
fn respelling_replaces_whole_option_names_only() {
    let specs = crate::layout::LayoutSpec::SPECS;
    let text = "time_bits + worker_bits, (sequence_bits) time_bits_x xtime_bits é:time_bits.";
    assert_eq!(
        respell_text(text, specs, Spelling::Camel),
        "timeBits + workerBits, (sequenceBits) time_bits_x xtime_bits é:timeBits."
    );
    assert_eq!(
        respell_text(text, specs, Spelling::Flag),
        "--time-bits + --worker-bits, (--sequence-bits) time_bits_x xtime_bits é:--time-bits."
    );
    assert_eq!(respell_text("", specs, Spelling::Camel), "");
    assert_eq!(
        respell_text("订单 time_bits", specs, Spelling::Camel),
        "订单 timeBits"
    );
}
