//! The fork guard is the core's (`segflake::fork`): this registers its hooks with
//! `pthread_atfork` once, when the first generator is made. A generator keeps the
//! `Origin` it was made in and refuses to issue IDs in a forked child (`SEGFLAKE_CLOSED`).

#[cfg(unix)]
use segflake_core::fork;
use segflake_core::fork::Origin;

#[cfg(unix)]
unsafe extern "C" {
    fn pthread_atfork(
        prepare: Option<unsafe extern "C" fn()>,
        parent: Option<unsafe extern "C" fn()>,
        child: Option<unsafe extern "C" fn()>,
    ) -> std::ffi::c_int;
}

#[cfg(unix)]
unsafe extern "C" fn prepare() {
    fork::before_fork();
}

#[cfg(unix)]
unsafe extern "C" fn in_parent() {
    fork::after_fork_in_parent();
}

#[cfg(unix)]
unsafe extern "C" fn in_child() {
    fork::after_fork_in_child();
}

/// The origin of a new generator (registers the fork hooks on first use).
pub(crate) fn origin() -> Origin {
    #[cfg(unix)]
    {
        static REGISTER: std::sync::Once = std::sync::Once::new();
        REGISTER.call_once(|| {
            // SAFETY: the hooks only call the core's fork functions (atomics and short sleeps).
            unsafe { pthread_atfork(Some(prepare), Some(in_parent), Some(in_child)) };
        });
    }
    Origin::here()
}
