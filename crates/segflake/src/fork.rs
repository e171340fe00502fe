//! The fork guard: a generator inherited by a child of `fork()` refuses to issue IDs.
//!
//! A forked child gets a copy of every generator's state (the same snowflake tick and
//! sequence, the same buffered segments), so it would issue the IDs its parent issues.
//! The host registers its fork hooks once (C: `pthread_atfork`; Python:
//! `os.register_at_fork`) and they call [`before_fork`], [`after_fork_in_parent`] and
//! [`after_fork_in_child`]. Every generator keeps the [`Origin`] it was made in; in a
//! child, [`Origin::check`] fails with [`Error::Closed`]-kind text that says what to do
//! instead. The check is one relaxed atomic load.
//!
//! A fork also waits for store operations in progress that hold locks (the file store's
//! mutex and `flock`): a child forked while another thread held one would inherit it held
//! forever. Such operations run inside [`enter`]; none starts while a fork happens.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use crate::error::Error;
use crate::snowflake::Fence;

/// The fences of leased generators: a forked child shuts them all, since the child holds
/// no lease (its parent does) and must not issue up to the parent's mark.
static FENCES: Mutex<Vec<Weak<Fence>>> = Mutex::new(Vec::new());

thread_local! {
    /// [`FENCES`], locked by `before_fork` on the forking thread until the fork is over,
    /// so the child never inherits it locked by another thread.
    static FENCES_HELD: RefCell<Option<MutexGuard<'static, Vec<Weak<Fence>>>>> =
        const { RefCell::new(None) };
}

/// Registers a leased generator's fence to be shut in forked children.
pub fn track(fence: &Arc<Fence>) {
    let mut fences = FENCES.lock().unwrap_or_else(|p| p.into_inner());
    fences.retain(|f| f.strong_count() > 0);
    fences.push(Arc::downgrade(fence));
}

static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Set between `before_fork` and the `after_fork_*` hooks: new store operations wait.
static FORKING: AtomicBool = AtomicBool::new(false);
/// Store operations in progress in this process.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// How long a fork waits for store operations in progress: 10 s.
pub const FORK_PATIENCE_MS: u64 = 10_000;

/// The fork generation of this process: 0 in the process that loaded segflake, one more
/// in each generation of fork children.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// Marks a store operation in progress until dropped.
#[must_use = "the operation counts as in progress until this is dropped"]
pub struct StoreOperation(());

impl Drop for StoreOperation {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Enters a store operation that holds locks a forked child must not inherit; waits while
/// a fork is in progress.
pub fn enter() -> StoreOperation {
    loop {
        while FORKING.load(Ordering::SeqCst) {
            pause(100);
        }
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        if !FORKING.load(Ordering::SeqCst) {
            return StoreOperation(());
        }
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The host's pre-fork hook: stops new store operations and waits up to
/// [`FORK_PATIENCE_MS`] for those in progress. Call without holding a host lock the store
/// operations need (Python: with the GIL released).
pub fn before_fork() {
    FORKING.store(true, Ordering::SeqCst);
    let mut waited_us = 0u64;
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 && waited_us < FORK_PATIENCE_MS * 1000 {
        pause(200);
        waited_us += 200;
    }
    let fences = FENCES.lock().unwrap_or_else(|p| p.into_inner());
    FENCES_HELD.with(|held| *held.borrow_mut() = Some(fences));
}

/// The host's hook in the parent after a fork.
pub fn after_fork_in_parent() {
    FENCES_HELD.with(|held| held.borrow_mut().take());
    FORKING.store(false, Ordering::SeqCst);
}

/// The host's hook in the child after a fork: every existing generator now refuses.
pub fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    if let Some(fences) = FENCES_HELD.with(|held| held.borrow_mut().take()) {
        for fence in fences.iter().filter_map(Weak::upgrade) {
            fence.shut_in_child();
        }
    }
    // Only the forking thread exists in the child: nothing is in flight.
    IN_FLIGHT.store(0, Ordering::SeqCst);
    FORKING.store(false, Ordering::SeqCst);
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn pause(us: u64) {
    std::thread::sleep(std::time::Duration::from_micros(us));
}

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn pause(_us: u64) {
    std::hint::spin_loop();
}

/// This process's ID; 0 on WebAssembly, which has one process and no ID to ask for
/// (`std::process::id` traps on `wasm32-unknown-unknown` and panics on WASI).
#[cfg(not(target_arch = "wasm32"))]
pub fn process_id() -> u32 {
    std::process::id()
}

/// This process's ID; 0 on WebAssembly, which has one process and no ID to ask for
/// (`std::process::id` traps on `wasm32-unknown-unknown` and panics on WASI).
#[cfg(target_arch = "wasm32")]
pub fn process_id() -> u32 {
    0
}

/// The process a generator was created in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    generation: u64,
    /// The creating process's ID.
    pub pid: u32,
}

impl Origin {
    /// This process, now.
    pub fn here() -> Origin {
        Origin {
            generation: GENERATION.load(Ordering::SeqCst),
            pid: process_id(),
        }
    }

    /// True in a process forked (directly or not) from the one that created the object.
    #[inline(always)]
    pub fn is_forked(&self) -> bool {
        GENERATION.load(Ordering::Relaxed) != self.generation
    }

    /// Refuses in a forked child. `what` names the object ("snowflake generator"); `hint`
    /// says where the host's users create per-process generators (may be empty).
    #[inline(always)]
    pub fn check(&self, what: &str, hint: &str) -> Result<(), Error> {
        if self.is_forked() {
            Err(self.error(what, hint))
        } else {
            Ok(())
        }
    }

    #[cold]
    fn error(&self, what: &str, hint: &str) -> Error {
        Error::Forked {
            message: format!(
                "this {what} was created in process {} and was inherited by process {} through \
                 fork(); a forked copy would issue the same IDs as its parent, so it refuses to \
                 issue any. Create generators after the fork, one per process{}{hint}; each \
                 snowflake generator needs its own worker_id",
                self.pid,
                process_id(),
                if hint.is_empty() { "" } else { ": " },
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test: the guard's state is process-wide.
    #[test]
    fn a_fork_waits_for_store_operations_and_closes_older_origins_in_the_child() {
        let op = enter();
        let t = std::thread::spawn(|| {
            before_fork();
            after_fork_in_parent();
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !t.is_finished(),
            "the fork waits while an operation is in progress"
        );
        drop(op);
        t.join().unwrap();
        drop(enter());

        let before = Origin::here();
        assert!(before.check("snowflake generator", "").is_ok());
        after_fork_in_child();
        let e = before
            .check("snowflake generator", "in a post_fork hook")
            .unwrap_err();
        assert_eq!(e.code(), "CLOSED");
        assert!(
            e.to_string()
                .contains("one per process: in a post_fork hook;"),
            "{e}"
        );
        assert!(Origin::here().check("snowflake generator", "").is_ok());
    }
}
