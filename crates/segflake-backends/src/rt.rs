//! The tokio runtime an async client (PostgreSQL, ZooKeeper, etcd) is driven on, behind the
//! blocking traits of the core.
//!
//! A plain `Runtime` would make the adapters unusable from async code: `block_on` panics
//! on a thread that already runs a runtime ("Cannot start a runtime from within a
//! runtime"), and dropping a runtime there panics too ("Cannot drop a runtime in a context
//! where blocking is not allowed"). So:
//! * a call made on such a thread runs its `block_on` on a short-lived thread of its own
//!   (scoped: the future may borrow), and the caller waits for it; elsewhere (the
//!   generators' fetch and lease threads, a plain `main`) it runs in place;
//! * the runtime is shut down with `shutdown_background` on drop, which never blocks, so
//!   the adapter may be dropped anywhere.
//!
//! Every call stays bounded by the adapter's own timeout (the futures carry it).

use std::future::Future;

/// A runtime that may be called and dropped from any thread, async or not.
pub(crate) struct Runtime {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Runtime {
    /// A runtime on the calling thread only (tasks run while a call waits in `block_on`).
    #[cfg(feature = "postgres")]
    pub(crate) fn current_thread(client: &'static str) -> crate::Result<Runtime> {
        Runtime::built(
            client,
            tokio::runtime::Builder::new_current_thread().enable_all(),
        )
    }

    /// A runtime with one worker thread of its own, so its tasks (a session's heartbeats,
    /// a channel's worker) run between calls too.
    #[cfg(any(feature = "zookeeper", feature = "etcd"))]
    pub(crate) fn one_worker(client: &'static str) -> crate::Result<Runtime> {
        Runtime::built(
            client,
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("segflake-{}", client.to_ascii_lowercase()))
                .enable_all(),
        )
    }

    fn built(
        client: &'static str,
        builder: &mut tokio::runtime::Builder,
    ) -> crate::Result<Runtime> {
        let runtime = builder
            .build()
            .map_err(|source| crate::Error::Start { client, source })?;
        Ok(Runtime {
            runtime: Some(runtime),
        })
    }

    fn get(&self) -> &tokio::runtime::Runtime {
        self.runtime.as_ref().expect("the runtime lives until drop")
    }

    /// Runs `work` to completion on this runtime; from a thread that runs a runtime of its
    /// own, on a new thread (the caller blocks until it is done).
    pub(crate) fn block_on<F>(&self, work: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.get();
        if tokio::runtime::Handle::try_current().is_err() {
            return runtime.block_on(work);
        }
        // A thread that runs no runtime may block (the caller waits for it, as it asked
        // for a blocking call).
        std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(work))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Spawns `task` on this runtime.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        drop(self.get().spawn(task));
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Never blocks, so it is allowed on a thread that runs a runtime; the tasks
            // (connections, sessions) are dropped and their sockets closed.
            runtime.shutdown_background();
        }
    }
}
