//! What every simulated world shares: the seeded random source, the event queue, the
//! network's faults, the trace, and the report of a broken invariant.
//!
//! Everything a run does is a function of its seed: no thread, no real clock, no
//! iteration over a randomly ordered map. Two runs of one seed produce the same events in
//! the same order, which the trace hash lets a test check.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write as _;

/// xoshiro256** seeded through splitmix64: fast, and the same sequence on every target.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

pub fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// A signed number in `-mag..=mag`.
    pub fn signed(&mut self, mag: u64) -> i64 {
        self.range(0, 2 * mag) as i64 - mag as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// A rate drawn for one run: 0 with probability 1/4, else up to `max`, so that runs
    /// with and without each fault are both common.
    pub fn rate(&mut self, max: f64) -> f64 {
        if self.chance(0.25) {
            0.0
        } else {
            max * (self.range(1, 1000) as f64 / 1000.0)
        }
    }

    /// A length with a long tail: usually up to `typical`, sometimes up to `tail`.
    pub fn tailed(&mut self, typical: u64, tail: u64, p_tail: f64) -> u64 {
        if self.chance(p_tail) {
            self.range(typical, tail)
        } else {
            self.range(0, typical)
        }
    }

    /// An independent stream for one purpose (a process's nonces, say).
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// An event due at `at` (true milliseconds); ties in order of scheduling.
struct Due<E> {
    at: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Due<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Due<E> {}
impl<E> PartialOrd for Due<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Due<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The one event queue of a run.
pub struct Queue<E> {
    heap: BinaryHeap<Due<E>>,
    seq: u64,
    pub now: u64,
    pub processed: u64,
}

impl<E> Queue<E> {
    pub fn new(start: u64) -> Queue<E> {
        Queue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: start,
            processed: 0,
        }
    }

    pub fn at(&mut self, at: u64, event: E) {
        self.seq += 1;
        self.heap.push(Due {
            at: at.max(self.now),
            seq: self.seq,
            event,
        });
    }

    pub fn after(&mut self, delay: u64, event: E) {
        let at = self.now + delay;
        self.at(at, event);
    }

    /// Schedules a request's application(s) as `deliveries` drew them: `apply(true)` is the
    /// one whose reply goes back, `apply(false)` a second application nobody hears of.
    pub fn deliver(&mut self, (d, again): (u64, Option<u64>), apply: impl Fn(bool) -> E) {
        if let Some(again) = again {
            self.after(again, apply(false));
        }
        self.after(d, apply(true));
    }

    /// The next event due no later than `until`, with the clock moved to it.
    pub fn pop(&mut self, until: u64) -> Option<E> {
        if self.heap.peek()?.at > until {
            return None;
        }
        let due = self.heap.pop()?;
        self.now = due.at;
        self.processed += 1;
        Some(due.event)
    }
}

/// What the network does to one message (a request or its reply), drawn per message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetFaults {
    /// A request lost before the server saw it.
    pub lose: f64,
    /// A request applied whose reply is lost.
    pub no_reply: f64,
    /// A request applied a second time, later (a client or pool that resends).
    pub twice: f64,
    /// Each leg's usual delay, up to this (milliseconds).
    pub delay_ms: u64,
    /// The chance of a slow leg, up to `slow_ms`.
    pub slow: f64,
    pub slow_ms: u64,
}

impl NetFaults {
    pub const NONE: NetFaults = NetFaults {
        lose: 0.0,
        no_reply: 0.0,
        twice: 0.0,
        delay_ms: 1,
        slow: 0.0,
        slow_ms: 1,
    };

    pub fn draw(rng: &mut Rng, timeout_ms: u64) -> NetFaults {
        NetFaults {
            lose: rng.rate(0.05),
            no_reply: rng.rate(0.05),
            twice: rng.rate(0.05),
            delay_ms: rng.range(1, 20),
            slow: rng.rate(0.05),
            slow_ms: rng.range(timeout_ms / 2, 3 * timeout_ms),
        }
    }

    /// When a request sent now is applied: after one leg, and (if the network applies it
    /// twice) once more later.
    pub fn deliveries(&self, rng: &mut Rng) -> (u64, Option<u64>) {
        let d = self.leg(rng);
        let again = rng
            .chance(self.twice)
            .then(|| d + self.leg(rng) + rng.range(0, self.slow_ms));
        (d, again)
    }

    pub fn leg(&self, rng: &mut Rng) -> u64 {
        if rng.chance(self.slow) {
            rng.range(self.delay_ms, self.slow_ms.max(self.delay_ms))
        } else {
            rng.range(0, self.delay_ms)
        }
    }
}

/// A network partition between one process (or all, `None`) and the server, for a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Partition {
    pub process: Option<usize>,
    pub from: u64,
    pub until: u64,
    /// Requests dropped (they never reach the server).
    pub requests: bool,
    /// Replies dropped (the server applied the request).
    pub replies: bool,
}

impl Partition {
    pub fn draw(rng: &mut Rng, processes: usize, start: u64, span: u64, longest: u64) -> Self {
        let from = start + rng.range(0, span);
        let (requests, replies) = match rng.range(0, 2) {
            0 => (true, true),
            1 => (true, false),
            _ => (false, true),
        };
        Partition {
            process: (!rng.chance(0.3)).then(|| rng.range(0, processes as u64 - 1) as usize),
            from,
            until: from + rng.range(1, longest),
            requests,
            replies,
        }
    }

    pub fn cuts(&self, process: usize, at: u64, request: bool) -> bool {
        at >= self.from
            && at < self.until
            && self.process.is_none_or(|p| p == process)
            && if request { self.requests } else { self.replies }
    }
}

/// The last events of a run, kept only when a run is replayed to be reported.
pub struct Trace {
    pub keep: bool,
    /// How many events are kept: [`trace_lines`].
    limit: usize,
    lines: VecDeque<String>,
    /// FNV-1a over every event, kept or not: equal for two runs of one seed.
    pub hash: u64,
}

/// How many events a report shows: 200, or `SEGFLAKE_SIM_TRACE`.
pub fn trace_lines() -> usize {
    std::env::var("SEGFLAKE_SIM_TRACE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

impl Trace {
    pub fn new(keep: bool) -> Trace {
        Trace {
            keep,
            limit: if keep { trace_lines() } else { 0 },
            lines: VecDeque::new(),
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Mixes `parts` into the hash (always) and, when kept, records `line()`.
    pub fn event(&mut self, at: u64, parts: &[u64], line: impl FnOnce() -> String) {
        for v in std::iter::once(at).chain(parts.iter().copied()) {
            for b in v.to_le_bytes() {
                self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
        if self.keep {
            if self.lines.len() == self.limit {
                self.lines.pop_front();
            }
            self.lines.push_back(format!("{at:>8} {}", line()));
        }
    }

    pub fn lines(&self) -> impl Iterator<Item = &String> {
        self.lines.iter()
    }
}

/// A broken invariant: its name and what shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

/// What one seed's run produced.
pub struct Outcome {
    pub violation: Option<Violation>,
    /// The options and fault rates drawn, one per line.
    pub drawn: Vec<String>,
    /// Fault classes that occurred (name, count), for the coverage table.
    pub faults: Vec<(&'static str, u64)>,
    pub events: u64,
    pub ids: u64,
    pub trace_hash: u64,
    pub trace: Vec<String>,
}

impl Outcome {
    /// What a finished run produced: its violation (if any), the options and faults
    /// drawn, how often each fault class occurred, and its queue's and trace's counts.
    pub fn of<E>(
        violation: Option<Violation>,
        drawn: Vec<String>,
        faults: std::collections::BTreeMap<&'static str, u64>,
        q: &Queue<E>,
        ids: u64,
        trace: &Trace,
    ) -> Outcome {
        Outcome {
            violation,
            drawn,
            faults: faults.into_iter().collect(),
            events: q.processed,
            ids,
            trace_hash: trace.hash,
            trace: trace.lines().cloned().collect(),
        }
    }

    /// The report a failing seed prints: the replay variable first.
    pub fn report(&self, world: &str, seed: u64) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "SEGFLAKE_SIM_SEED={seed}");
        if let Some(v) = &self.violation {
            let _ = writeln!(out, "world: {world}\ninvariant broken: {}", v.invariant);
            let _ = writeln!(out, "{}", v.detail);
        }
        let _ = writeln!(out, "drawn:");
        for line in &self.drawn {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(out, "last {} events:", self.trace.len());
        for line in &self.trace {
            let _ = writeln!(out, "  {line}");
        }
        out
    }
}

/// A map keyed by u64 with a fixed hash (no per-process random state, and fast).
pub type IdMap<V> = std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, v: u64) {
        let mut x = v;
        self.0 = splitmix64(&mut x);
    }
}
