//! Worker IDs from decimal text (an environment variable such as Kubernetes' POD_INDEX):
//! the messages every binding passes through unchanged.

use segflake::{worker_id_from_text, Error, ErrorKind, Layout, LayoutSpec};

fn message(r: segflake::Result<u64>) -> (ErrorKind, String) {
    let e = r.expect_err("an error");
    (e.kind(), e.to_string())
}

#[test]
fn decimal_values_within_the_layout() {
    assert_eq!(worker_id_from_text("POD_INDEX", Some("0"), 10).unwrap(), 0);
    assert_eq!(worker_id_from_text("POD_INDEX", Some("3"), 10).unwrap(), 3);
    assert_eq!(
        worker_id_from_text("POD_INDEX", Some("007"), 10).unwrap(),
        7
    );
    assert_eq!(
        worker_id_from_text("POD_INDEX", Some("1023"), 10).unwrap(),
        1023
    );
    assert_eq!(worker_id_from_text("W", Some("0"), 0).unwrap(), 0);
    assert_eq!(
        worker_id_from_text("W", Some("65535"), 16).unwrap(),
        65535,
        "sonyflake's 16 bits"
    );
}

#[test]
fn out_of_range_is_the_layouts_worker_error() {
    let (kind, text) = message(worker_id_from_text("POD_INDEX", Some("1024"), 10));
    assert_eq!(kind, ErrorKind::WorkerIdOutOfRange);
    // The same error the layout's own check gives for that worker ID.
    let layout: Layout = LayoutSpec::default().build().unwrap();
    assert_eq!(text, layout.check_worker(1024).unwrap_err().to_string());
    assert_eq!(
        text,
        "worker id 1024 is out of range: the layout has 10 worker bits, so worker ids are 0..=1023"
    );
    let (kind, _) = message(worker_id_from_text("W", Some("8"), 3));
    assert_eq!(kind, ErrorKind::WorkerIdOutOfRange);
}

#[test]
fn unset_empty_and_non_decimal_name_the_variable() {
    let cases = [
        (None, "invalid POD_INDEX: POD_INDEX is not set; expected a decimal worker ID 0..=1023, such as the pod index 3"),
        (Some(""), "invalid POD_INDEX: POD_INDEX is empty; expected a decimal worker ID 0..=1023, such as the pod index 3"),
        (Some("web-3"), "invalid POD_INDEX: POD_INDEX=\"web-3\" is not a decimal number; expected a decimal worker ID 0..=1023, such as the pod index 3"),
        (Some("99999999999999999999999"), "invalid POD_INDEX: POD_INDEX=\"99999999999999999999999\" is too large; expected a decimal worker ID 0..=1023, such as the pod index 3"),
    ];
    for (text, expected) in cases {
        let (kind, got) = message(worker_id_from_text("POD_INDEX", text, 10));
        assert_eq!(kind, ErrorKind::InvalidArgument, "{text:?}");
        assert_eq!(got, expected);
    }
    for text in [" 3", "3 ", "+3", "-1", "3.0", "0x10", "３", "1e3"] {
        let e = worker_id_from_text("POD_INDEX", Some(text), 10).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument { name, .. } if name == "POD_INDEX"),
            "{text:?}: {e}"
        );
    }
}

#[test]
fn worker_bits_beyond_an_id_are_refused() {
    let (kind, text) = message(worker_id_from_text("POD_INDEX", Some("1"), 64));
    assert_eq!(kind, ErrorKind::InvalidArgument);
    assert_eq!(
        text,
        "invalid worker_bits: 64 is more than an ID has; allowed 0..=63"
    );
    assert_eq!(worker_id_from_text("W", Some("5"), 63).unwrap(), 5);
}
