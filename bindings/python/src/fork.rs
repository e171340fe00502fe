//! Fork detection.
//!
//! `os.fork()` copies a generator's state into the child, which would then issue the
//! same IDs as the parent. Every generator records the fork generation of the process
//! that made it; an `os.register_at_fork(after_in_child=...)` hook bumps the generation
//! in each child, and a generator whose recorded generation differs refuses to work.
//! The check is one relaxed atomic load per call.

use crate::errors::closed;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Set between `before` and `after` fork: new store operations wait.
static FORKING: AtomicBool = AtomicBool::new(false);
/// Store operations (file and memory stores) in progress in this process.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// How long a fork waits for store operations in progress to finish.
const FORK_PATIENCE: Duration = Duration::from_secs(10);

/// Marks a store operation in progress; a fork waits until none is (see [`enter`]).
pub struct StoreOperation(());

impl Drop for StoreOperation {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Enters a store operation that holds locks (a mutex, an `flock`ed descriptor) a forked
/// child must not inherit held: a child forked while another thread was inside the
/// file store would keep its lock file locked for every process, forever. A fork waits
/// for such operations to finish and none starts while it happens. Call without the GIL.
pub fn enter() -> StoreOperation {
    loop {
        while FORKING.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(100));
        }
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        if !FORKING.load(Ordering::SeqCst) {
            return StoreOperation(());
        }
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `os.register_at_fork(before=...)`: waits (GIL released) for store operations in progress.
#[pyfunction]
pub fn _before_fork(py: Python<'_>) {
    FORKING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = Instant::now() + FORK_PATIENCE;
        while IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
    });
}

/// `os.register_at_fork(after_in_parent=...)`.
#[pyfunction]
pub fn _after_fork_in_parent() {
    FORKING.store(false, Ordering::SeqCst);
}

/// Called in the child after every `os.fork()` (registered at import).
#[pyfunction]
pub fn _after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
    // Only the forking thread exists here: nothing is in flight.
    IN_FLIGHT.store(0, Ordering::SeqCst);
    FORKING.store(false, Ordering::SeqCst);
}

/// Whether the current process is a fork child of the one that imported segflake (for tests).
#[pyfunction]
pub fn _fork_generation() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// The process an object was created in.
#[derive(Debug, Clone, Copy)]
pub struct Origin {
    generation: u64,
    pub pid: u32,
}

impl Origin {
    pub fn here() -> Origin {
        Origin {
            generation: GENERATION.load(Ordering::SeqCst),
            pid: std::process::id(),
        }
    }

    /// True in a process forked (directly or not) from the one that created the object.
    #[inline(always)]
    pub fn is_forked(&self) -> bool {
        GENERATION.load(Ordering::Relaxed) != self.generation
    }

    /// Refuses in a forked child, with a message that says what to do instead.
    #[inline(always)]
    pub fn check(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        if self.is_forked() {
            Err(self.error(py, what))
        } else {
            Ok(())
        }
    }

    #[cold]
    fn error(&self, py: Python<'_>, what: &str) -> PyErr {
        closed(
            py,
            format!(
                "this {what} was created in process {} and was inherited by process {} through \
                 fork(); a forked copy would issue the same IDs as its parent, so it refuses to \
                 issue any. Create generators after the fork, one per process: in gunicorn's \
                 post_fork hook or lazily on first use in each worker (segflake.per_process), in \
                 a multiprocessing Pool initializer, or in Celery's worker_process_init signal; \
                 each snowflake generator needs its own worker_id",
                self.pid,
                std::process::id()
            ),
        )
    }
}

/// Registers the after-fork hook with `os.register_at_fork` (where the OS has fork).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let os = py.import("os")?;
    if os.hasattr("register_at_fork")? {
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("before", m.getattr("_before_fork")?)?;
        kwargs.set_item("after_in_parent", m.getattr("_after_fork_in_parent")?)?;
        kwargs.set_item("after_in_child", m.getattr("_after_fork_in_child")?)?;
        os.getattr("register_at_fork")?.call((), Some(&kwargs))?;
    }
    Ok(())
}
