//! Fork detection: a generator inherited by a child of `fork()` would issue IDs the parent
//! also issues (the same snowflake state, the same buffered segments), so it refuses to
//! work there with `SEGFLAKE_CLOSED`. A `pthread_atfork` child handler bumps a process-wide
//! generation; each generator remembers the generation it was made in. The check is one
//! relaxed atomic load.

use crate::error::{FfiError, FfiResult};
use segflake_core::ErrorKind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static REGISTER: Once = Once::new();

unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> std::ffi::c_int;
}

unsafe extern "C" fn in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// The fork generation a new generator belongs to (registers the handler on first use).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Birth(u64);

impl Birth {
    pub(crate) fn now() -> Birth {
        REGISTER.call_once(|| {
            // SAFETY: registers a handler that only touches an atomic.
            unsafe { pthread_atfork(None, None, Some(in_child)) };
        });
        Birth(GENERATION.load(Ordering::Relaxed))
    }

    /// Refuses a generator used in a forked child of the process that made it.
    #[inline]
    pub(crate) fn check(self, what: &str) -> FfiResult {
        if GENERATION.load(Ordering::Relaxed) == self.0 {
            Ok(())
        } else {
            Err(FfiError {
                status: ErrorKind::Closed.status(),
                message: format!(
                    "this {what} was created before fork() and is unusable in the child \
                     process: it would issue IDs the parent issues too; create generators \
                     after fork(), in each process"
                ),
            })
        }
    }
}
