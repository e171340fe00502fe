//! Reloading `serve` without a restart: on SIGHUP, and when the config file, a
//! certificate, key or CA file, or a token file changes (checked once a second, by path,
//! so a Kubernetes Secret's rotation by symlink swap is seen).
//!
//! * A reload applies whole or not at all: the flags and file are read again, the tokens
//!   resolved and the certificates loaded before anything is swapped; any error leaves the
//!   old configuration serving and is logged, counted and shown.
//! * What it swaps: keys, tokens and clients, `max_count`, `max_alloc_step`, and each TLS
//!   listener's certificates (for connections accepted after it). Other settings need a
//!   restart; a reload that changes them keeps the running ones and says so.
//! * A key no longer served is refused from the swap on, and its segment IDs fetched but
//!   not issued are given back to the store ([`segflake::SegmentGenerator::retire`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use super::tls::{self, Acceptor};
use super::{log, Policy, Service};
use crate::error::CliError;
use crate::serve_cmd::ServeConfig;

/// Reads the flags and the config file again.
pub type Reparse = Box<dyn Fn() -> Result<ServeConfig, CliError> + Send + Sync>;

/// What reloads did, for `/metrics` and the status page.
#[derive(Default)]
pub struct Reloads {
    pub applied: AtomicU64,
    pub failed: AtomicU64,
    /// The last reload's error, while the last reload failed.
    pub last_error: Mutex<Option<String>>,
    /// The server certificate's `notAfter` (Unix seconds), as last loaded.
    pub cert_not_after: AtomicU64,
}

impl Reloads {
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// A file's identity and version: device, inode, modification time and length.
type Stamp = Option<(u64, u64, u128, u64)>;

fn stamp(path: &PathBuf) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let modified = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some((m.dev(), m.ino(), modified.as_nanos(), m.len()))
}

pub struct Reloader {
    reparse: Reparse,
    /// The configuration the service started with (what needs a restart is kept).
    started: ServeConfig,
    acceptors: Vec<Arc<Acceptor>>,
    watched: Vec<(PathBuf, Stamp)>,
}

impl Reloader {
    pub fn new(
        reparse: Reparse,
        started: ServeConfig,
        acceptors: Vec<Arc<Acceptor>>,
        token_files: Vec<PathBuf>,
    ) -> Reloader {
        let mut r = Reloader {
            reparse,
            started,
            acceptors,
            watched: Vec::new(),
        };
        let paths = r.paths(&r.started, token_files);
        r.watch(paths);
        r
    }

    pub fn drain_timeout_ms(&self) -> u64 {
        self.started.drain_timeout_ms
    }

    fn paths(&self, config: &ServeConfig, token_files: Vec<PathBuf>) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = config.config_path.iter().cloned().collect();
        if let Some(files) = &config.tls {
            paths.extend(files.paths());
        }
        paths.extend(token_files);
        paths
    }

    fn watch(&mut self, paths: Vec<PathBuf>) {
        self.watched = paths
            .into_iter()
            .map(|p| {
                let s = stamp(&p);
                (p, s)
            })
            .collect();
    }

    fn changed(&self) -> Option<PathBuf> {
        self.watched
            .iter()
            .find(|(p, s)| stamp(p) != *s)
            .map(|(p, _)| p.clone())
    }

    /// Reloads on SIGHUP and on a change of a watched file until `stop` changes.
    pub async fn run(
        mut self,
        service: Arc<Service>,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = match signal(SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                log("warn", "no SIGHUP reloads", &[("error", &e.to_string())]);
                None
            }
        };
        loop {
            let hangup = async {
                match &mut hup {
                    Some(h) => {
                        h.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            let why = tokio::select! {
                _ = hangup => "SIGHUP".to_string(),
                _ = tokio::time::sleep(Duration::from_secs(1)) => match self.changed() {
                    Some(path) => format!("{} changed", path.display()),
                    None => continue,
                },
                _ = stop.changed() => return,
            };
            self.reload(&service, &why).await;
        }
    }

    async fn reload(&mut self, service: &Arc<Service>, why: &str) {
        // Stamped before the files are read: one written meanwhile is read again.
        let read: Vec<(PathBuf, Stamp)> = self
            .watched
            .iter()
            .map(|(p, _)| (p.clone(), stamp(p)))
            .collect();
        match self.prepare().await {
            Ok((config, policy, tls, token_files)) => {
                for (acceptor, config) in self.acceptors.iter().zip(tls) {
                    acceptor.apply(config);
                }
                let removed = service.apply(policy);
                let paths = self.paths(&config, token_files);
                self.watch(paths);
                for (path, stamp) in &mut self.watched {
                    if let Some((_, before)) = read.iter().find(|(p, _)| p == path) {
                        *stamp = *before;
                    }
                }
                if let Some(files) = &config.tls {
                    service
                        .reloads
                        .cert_not_after
                        .store(tls::not_after(files), Ordering::Relaxed);
                }
                service.reloads.applied.fetch_add(1, Ordering::Relaxed);
                *service
                    .reloads
                    .last_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = None;
                let kept = self.started.needs_restart(&config).join(", ");
                let mut fields = vec![("why", why.to_string())];
                if !kept.is_empty() {
                    fields.push(("needs a restart (kept)", kept));
                }
                let fields: Vec<(&str, &str)> =
                    fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                log("info", "reloaded", &fields);
                for key in removed {
                    let service = service.clone();
                    tokio::task::spawn_blocking(move || service.retire(&key));
                }
            }
            Err(e) => {
                // Seen once: the same broken files are not read again every second.
                self.watched = read;
                service.reloads.failed.fetch_add(1, Ordering::Relaxed);
                log(
                    "error",
                    "reload refused; the running configuration is kept",
                    &[("why", why), ("error", &e)],
                );
                *service
                    .reloads
                    .last_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner()) = Some(e);
            }
        }
    }

    /// Everything a reload applies, built and checked, or the first error.
    #[allow(clippy::type_complexity)]
    async fn prepare(
        &self,
    ) -> Result<
        (
            ServeConfig,
            Policy,
            Vec<Arc<rustls::ServerConfig>>,
            Vec<PathBuf>,
        ),
        String,
    > {
        // Reading files (the config, tokens, certificates) off the runtime's threads.
        let config = tokio::task::block_in_place(|| (self.reparse)()).map_err(|e| e.to_string())?;
        let (access, token_files) = super::Access::load(config.keys.as_ref())?;
        let mut tls = Vec::new();
        if !self.acceptors.is_empty() {
            let files = config
                .tls
                .as_ref()
                .ok_or("the config turns TLS off; that needs a restart (the listeners keep TLS)")?;
            for acceptor in &self.acceptors {
                tls.push(acceptor.prepare(files)?);
            }
        }
        let policy = Policy {
            access,
            max_count: config.max_count,
            max_alloc_step: config.max_alloc_step,
        };
        Ok((config, policy, tls, token_files))
    }
}
