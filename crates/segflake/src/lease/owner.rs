//! Owner tokens: a caller's label plus the engine's own nonce, so two engines never share
//! the token every compare-and-set on the registry checks.

/// 64 fresh random bits for an engine's nonce ([`LeaseEngine::new`](super::LeaseEngine::new)): the process's
/// randomly keyed hasher over its ID, the time and a per-process counter, so two engines
/// of one process, of two processes, or of a parent and its forked child differ.
/// WebAssembly hosts take theirs from the host (`crypto.getRandomValues`).
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn fresh_nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(crate::fork::process_id());
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// The default owner label: the host name where the platform tells it, else `segflake`.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn default_label() -> String {
    let from_env = ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
    let from_file = || {
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    from_env
        .or_else(from_file)
        .map(|h| h.chars().take(MAX_LABEL_BYTES).collect::<String>())
        .filter(|h| h.len() <= MAX_LABEL_BYTES)
        .unwrap_or_else(|| "segflake".into())
}

/// The longest owner label, in bytes. The token the registry stores is the label, `#` and
/// 16 hex digits: at most [`MAX_OWNER_TOKEN_BYTES`].
pub const MAX_LABEL_BYTES: usize = 128;
/// The longest owner token a registry stores (its columns hold at least this many).
pub const MAX_OWNER_TOKEN_BYTES: usize = MAX_LABEL_BYTES + 17;

/// The owner token of an engine labelled `label` with `nonce`.
pub fn owner_token(label: &str, nonce: u64) -> String {
    format!("{label}#{nonce:016x}")
}

pub(super) fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
