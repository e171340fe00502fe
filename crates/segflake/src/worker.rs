//! Deriving a worker ID from where a process runs.

use crate::error::{quoted, Error, Result};
use crate::layout::max_value;

/// The ordinal of a Kubernetes StatefulSet pod from its hostname: `web-7` → 7,
/// `web-7.web.default.svc.cluster.local` → 7. The result still has to fit the layout.
pub fn worker_id_from_hostname(hostname: &str) -> Result<u64> {
    let host = hostname.split('.').next().unwrap_or("");
    let bad = |why: &str| {
        Error::invalid_argument(
            "hostname",
            format!(
                "{hostname} {why}; expected a StatefulSet pod name ending in -<ordinal>, \
                 such as web-7",
                hostname = quoted(hostname)
            ),
        )
    };
    let (_, ordinal) = host.rsplit_once('-').ok_or_else(|| bad("has no '-'"))?;
    if ordinal.is_empty() || !ordinal.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("does not end in a number"));
    }
    ordinal
        .parse()
        .map_err(|_| bad("has an ordinal that is too large"))
}

/// A worker ID given as decimal text, such as an environment variable that Kubernetes'
/// downward API fills from the `apps.kubernetes.io/pod-index` label (`POD_INDEX=3` → 3),
/// range-checked against a layout with `worker_bits` worker bits.
///
/// `name` is what the text came from (the variable's name), used in the error; `text` is
/// its value, `None` when it is not set. An unset, empty or non-decimal value is
/// `InvalidArgument` naming `name`; a number that does not fit `worker_bits` is
/// `WorkerIdOutOfRange`, as for any worker ID.
pub fn worker_id_from_text(name: &str, text: Option<&str>, worker_bits: u8) -> Result<u64> {
    if worker_bits > 63 {
        return Err(Error::invalid_argument(
            "worker_bits",
            format!("{worker_bits} is more than an ID has; allowed 0..=63"),
        ));
    }
    let max = max_value(worker_bits);
    let bad = |why: String| {
        Error::invalid_argument(
            name.to_string(),
            format!("{why}; expected a decimal worker ID 0..={max}, such as the pod index 3"),
        )
    };
    let text = text.ok_or_else(|| bad(format!("{name} is not set")))?;
    if text.is_empty() {
        return Err(bad(format!("{name} is empty")));
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!(
            "{name}={text} is not a decimal number",
            text = quoted(text)
        )));
    }
    let worker_id: u64 = match text.trim_start_matches('0') {
        "" => 0,
        digits => digits
            .parse()
            .map_err(|_| bad(format!("{name}={text} is too large", text = quoted(text))))?,
    };
    if worker_id > max {
        return Err(Error::WorkerIdOutOfRange {
            worker_id,
            worker_bits,
        });
    }
    Ok(worker_id)
}

/// The low `worker_bits` bits of a dotted-quad IPv4 address: `10.0.3.7` with 10 bits → 775.
pub fn worker_id_from_ipv4(address: &str, worker_bits: u8) -> Result<u64> {
    if worker_bits > 32 {
        return Err(Error::invalid_argument(
            "worker_bits",
            format!("{worker_bits} is more than an IPv4 address has; allowed 0..=32"),
        ));
    }
    let bad = || {
        Error::invalid_argument(
            "address",
            format!(
                "{address} is not a dotted-quad IPv4 address such as 10.0.3.7",
                address = quoted(address)
            ),
        )
    };
    let mut value: u64 = 0;
    let mut parts = 0;
    for part in address.split('.') {
        if part.is_empty() || part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let octet: u64 = part.parse().map_err(|_| bad())?;
        if octet > 255 {
            return Err(bad());
        }
        value = (value << 8) | octet;
        parts += 1;
    }
    if parts != 4 {
        return Err(bad());
    }
    Ok(value & max_value(worker_bits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames() {
        assert_eq!(worker_id_from_hostname("web-7").unwrap(), 7);
        assert_eq!(
            worker_id_from_hostname("id-gen-12.id-gen.ns.svc").unwrap(),
            12
        );
        assert!(worker_id_from_hostname("web").is_err());
        assert!(worker_id_from_hostname("web-").is_err());
        assert!(worker_id_from_hostname("web-x1").is_err());
    }

    #[test]
    fn ipv4() {
        assert_eq!(worker_id_from_ipv4("10.0.3.7", 10).unwrap(), 775);
        assert_eq!(worker_id_from_ipv4("192.168.1.1", 16).unwrap(), 0x0101);
        for bad in ["10.0.3", "10.0.3.256", "1.2.3.4.5", "a.b.c.d", "", "1..2.3"] {
            assert!(worker_id_from_ipv4(bad, 10).is_err(), "{bad}");
        }
    }
}
