//! The give backs this server applied by token (`POST /api/segment/giveback/KEY?…&token=T`),
//! so a request resent after a lost reply (by the client, a proxy or a load balancer) is
//! answered as the first one was and does not reach the store again.
//!
//! A resend that arrives while its first still runs waits for the first's answer
//! ([`GiveBacks::claim`]). The SQL and Redis stores record the token themselves (a marker
//! row, a marker key): a resend that reaches another server, or this one after a restart,
//! changes nothing there either (it answers `givenBack: false`). The file store keeps no
//! tokens, so for it this record is the only guard: a resend is not covered once the server
//! restarted, nor once its token was forgotten ([`MAX_AGE`] after it was applied, or
//! [`MAX_TOKENS`] give backs later).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Tokens remembered at most (the oldest are forgotten first).
pub const MAX_TOKENS: usize = 100_000;
/// How long a token is remembered (the Redis marker key's lifetime too).
pub const MAX_AGE: Duration = Duration::from_secs(3600);

/// What a token is known for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remembered {
    /// Not applied here (or forgotten).
    Unknown,
    /// This give back was applied under the token, with this answer (`givenBack`).
    Answered(bool),
    /// The token was applied with another key, `expected_max_id` or `max_id`.
    OtherGiveBack,
}

/// One token's give back: which (a fingerprint of key and both IDs), its answer, when.
#[derive(Debug, Clone, Copy)]
struct Applied {
    request: u64,
    given: bool,
    at: Instant,
}

#[derive(Default)]
struct Record {
    by_token: HashMap<Arc<str>, Applied>,
    /// The tokens, oldest first.
    order: VecDeque<Arc<str>>,
    /// The tokens whose give back is running.
    running: HashSet<String>,
}

/// The tokens applied, bounded by [`MAX_TOKENS`] and [`MAX_AGE`].
#[derive(Default)]
pub struct GiveBacks {
    record: Mutex<Record>,
    /// Notified when a token's give back ends.
    ended: Condvar,
}

/// A token's give back running (see [`GiveBacks::claim`]); ends when dropped.
pub struct Claim<'a> {
    give_backs: &'a GiveBacks,
    token: String,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        lock(&self.give_backs.record).running.remove(&self.token);
        self.give_backs.ended.notify_all();
    }
}

/// A fingerprint of one give back's key and IDs (a resend is the same request).
pub fn fingerprint(key: &str, expected_max_id: u64, max_id: u64) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (key, expected_max_id, max_id).hash(&mut h);
    h.finish()
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl GiveBacks {
    /// Held from the lookup of `token` until its answer is remembered: waits while another
    /// request with the same token runs, so a resend is answered as its first request was
    /// (give backs with other tokens run on).
    pub fn claim(&self, token: &str) -> Claim<'_> {
        let mut record = lock(&self.record);
        while record.running.contains(token) {
            record = self.ended.wait(record).unwrap_or_else(|p| p.into_inner());
        }
        record.running.insert(token.to_string());
        Claim {
            give_backs: self,
            token: token.to_string(),
        }
    }

    /// What `token` was applied for, as of `now`.
    pub fn lookup(&self, token: &str, request: u64, now: Instant) -> Remembered {
        match lock(&self.record).by_token.get(token) {
            Some(a) if now.saturating_duration_since(a.at) >= MAX_AGE => Remembered::Unknown,
            Some(a) if a.request == request => Remembered::Answered(a.given),
            Some(_) => Remembered::OtherGiveBack,
            None => Remembered::Unknown,
        }
    }

    /// Remembers that `token` applied `request` with the answer `given` (the first answer
    /// stays if the token is known already); forgets what is too old or too many.
    pub fn remember(&self, token: &str, request: u64, given: bool, now: Instant) {
        let mut record = lock(&self.record);
        let Record {
            by_token, order, ..
        } = &mut *record;
        while let Some(oldest) = order.front() {
            let expired = by_token
                .get(oldest)
                .is_none_or(|a| now.saturating_duration_since(a.at) >= MAX_AGE);
            if !expired && order.len() < MAX_TOKENS {
                break;
            }
            by_token.remove(oldest);
            order.pop_front();
        }
        if let Some(a) = by_token.get(token) {
            if now.saturating_duration_since(a.at) < MAX_AGE {
                return;
            }
        }
        let token: Arc<str> = token.into();
        by_token.insert(
            token.clone(),
            Applied {
                request,
                given,
                at: now,
            },
        );
        order.push_back(token);
    }

    /// Tokens remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.record).by_token.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_answered_as_first_applied_and_another_give_back_under_it_is_told_apart() {
        let g = GiveBacks::default();
        let now = Instant::now();
        let a = fingerprint("order", 1001, 41);
        assert_eq!(g.lookup("t1", a, now), Remembered::Unknown);
        g.remember("t1", a, true, now);
        assert_eq!(g.lookup("t1", a, now), Remembered::Answered(true));
        g.remember("t1", a, false, now);
        assert_eq!(
            g.lookup("t1", a, now),
            Remembered::Answered(true),
            "the first answer stays"
        );
        for other in [
            fingerprint("orders", 1001, 41),
            fingerprint("order", 1002, 41),
            fingerprint("order", 1001, 42),
        ] {
            assert_eq!(g.lookup("t1", other, now), Remembered::OtherGiveBack);
        }
        assert_eq!(g.lookup("t2", a, now), Remembered::Unknown);
    }

    #[test]
    fn a_resend_waits_for_its_first_request_and_other_tokens_do_not() {
        let g = Arc::new(GiveBacks::default());
        let r = fingerprint("order", 10, 5);
        let first = g.claim("t1");
        let other = g.claim("t2");
        drop(other);
        let resend = {
            let g = g.clone();
            std::thread::spawn(move || {
                let _claim = g.claim("t1");
                g.lookup("t1", r, Instant::now())
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !resend.is_finished(),
            "the resend ran beside its first request"
        );
        g.remember("t1", r, true, Instant::now());
        drop(first);
        assert_eq!(resend.join().unwrap(), Remembered::Answered(true));
    }

    #[test]
    fn tokens_are_forgotten_after_an_hour_or_beyond_the_limit_oldest_first() {
        let g = GiveBacks::default();
        let start = Instant::now();
        let r = fingerprint("order", 10, 5);
        g.remember("old", r, true, start);
        let later = start + MAX_AGE - Duration::from_secs(1);
        assert_eq!(g.lookup("old", r, later), Remembered::Answered(true));
        let expired = start + MAX_AGE;
        assert_eq!(g.lookup("old", r, expired), Remembered::Unknown);
        g.remember("new", r, false, expired);
        assert_eq!(g.len(), 1, "the expired token is dropped");
        // A token applied again after it expired is remembered afresh (once).
        g.remember("old", r, false, expired);
        assert_eq!(g.lookup("old", r, expired), Remembered::Answered(false));
        assert_eq!(g.len(), 2);

        let g = GiveBacks::default();
        for i in 0..MAX_TOKENS + 10 {
            g.remember(&format!("{i:032x}"), r, true, start);
        }
        assert_eq!(g.len(), MAX_TOKENS);
        assert_eq!(
            g.lookup(&format!("{:032x}", 9), r, start),
            Remembered::Unknown
        );
        let newest = format!("{:032x}", MAX_TOKENS + 9);
        assert_eq!(g.lookup(&newest, r, start), Remembered::Answered(true));
        assert_eq!(
            g.lookup(&format!("{:032x}", 10), r, start),
            Remembered::Answered(true)
        );
    }
}
