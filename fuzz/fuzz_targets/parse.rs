//! Every parser of untrusted text: no panic, and whatever parses re-encodes to the same
//! value (and, for the fixed-width forms, to a canonical spelling of the same length).
#![no_main]

use libfuzzer_sys::fuzz_target;
use segflake::datetime::parse_time_ms;
use segflake::{Format, Preset};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for f in Format::ALL {
        if let Ok(id) = f.parse(text) {
            let again = f.encode(id);
            assert_eq!(f.parse(&again).unwrap(), id);
            if f != Format::Decimal {
                assert_eq!(again.len(), text.chars().count());
            }
        }
    }
    let _ = parse_time_ms(text);
    let _ = Preset::from_name(text);
    let _ = segflake::worker_id_from_hostname(text);
    let _ = segflake::worker_id_from_ipv4(text, 10);
});
