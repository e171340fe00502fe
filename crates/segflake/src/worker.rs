//! Deriving a worker ID from where a process runs.

use crate::error::{Error, Result};
use crate::layout::max_value;

/// The ordinal of a Kubernetes StatefulSet pod from its hostname: `web-7` → 7,
/// `web-7.web.default.svc.cluster.local` → 7. The result still has to fit the layout.
pub fn worker_id_from_hostname(hostname: &str) -> Result<u64> {
    let host = hostname.split('.').next().unwrap_or("");
    let bad = |why: &str| {
        Error::invalid_argument(
            "hostname",
            format!(
                "{hostname:?} {why}; expected a StatefulSet pod name ending in -<ordinal>, \
                 such as web-7"
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
            format!("{address:?} is not a dotted-quad IPv4 address such as 10.0.3.7"),
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
