//! The file store (`file:PATH`): Leaf's table as a small text file, for one machine.
//!
//! # On disk
//! ```text
//! # segflake file store, format 1
//! # <tag> <max_id> <step> <updated_at>: the next allocation of <step'> IDs for <tag>
//! # hands out [max_id, max_id + step') and stores max_id + step'.
//! order 4001 2000 2026-11-22T02:30:00.000Z
//! ```
//! One line per tag, sorted; `#` lines and blank lines are comments. `step` is the step of
//! the last allocation and `updated_at` its time (UTC); only `max_id` matters.
//!
//! # Durability and sharing
//! Every allocation, under an exclusive lock on `PATH.lock` (`flock`, so any number
//! of processes and threads can share one file), reads `PATH`, writes the whole new
//! content to `PATH.tmp`, `fsync`s it, renames it over `PATH` and `fsync`s the directory,
//! and only then returns the range. A crash at any instant leaves either the old file or
//! the new one, never a torn one; a range is handed out only after the file that moves
//! `max_id` past it is durable, so no range is ever handed out twice (a crash after the
//! rename merely skips the range). A file that cannot be parsed is never overwritten.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{check_tag, Allocation, SegmentStore, StoreFailure, MAX_ID};
use crate::datetime::{format_iso8601_ms, parse_time_ms};
use crate::error::{Error, Result};

/// Settings of a [`FileStore`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileStoreOptions {
    /// `max_id` of a tag created on first use (default 1, like a fresh Leaf row: the first
    /// allocation of step 2000 hands out 1..=2000). At most `i64::MAX`.
    pub initial_max_id: u64,
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        FileStoreOptions { initial_max_id: 1 }
    }
}

/// One tag's row in a file store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TagRecord {
    pub tag: String,
    /// The first ID the next allocation hands out.
    pub max_id: u64,
    /// The step of the last allocation.
    pub step: u64,
    /// When the row last changed (Unix ms; 0 if unknown).
    pub updated_ms: u64,
}

/// A durable, multi-process [`SegmentStore`] in one human-readable text file.
///
/// ```text
/// # segflake file store, format 1
/// order 4001 2000 2026-11-22T02:30:00.000Z
/// ```
/// One line per tag: tag, `max_id` (the first ID of the next range), the last step, when.
/// Every allocation, under an exclusive `flock` on `PATH.lock` (shared safely by any number
/// of processes and threads), writes the whole new content to `PATH.tmp`, `fsync`s it,
/// renames it over `PATH` and `fsync`s the directory before it returns the range, so a
/// crash at any instant never lets a range be handed out twice. A file that does not parse
/// is never overwritten.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    lock_path: PathBuf,
    tmp_path: PathBuf,
    options: FileStoreOptions,
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl FileStore {
    /// A store on `path` with default options. The file is created at the first
    /// allocation; an existing one is checked now.
    ///
    /// Errors: [`Error::Store`] if the file exists but cannot be read or parsed, or its
    /// directory does not exist.
    pub fn open(path: impl AsRef<Path>) -> Result<FileStore> {
        FileStore::with_options(path, FileStoreOptions::default())
    }

    /// A store on `path` with `options`.
    pub fn with_options(path: impl AsRef<Path>, options: FileStoreOptions) -> Result<FileStore> {
        let path = path.as_ref().to_path_buf();
        if options.initial_max_id > MAX_ID {
            return Err(Error::invalid_argument(
                "initial_max_id",
                format!(
                    "{} is out of range; allowed 0..={MAX_ID}",
                    options.initial_max_id
                ),
            ));
        }
        if path.as_os_str().is_empty() {
            return Err(Error::invalid_argument(
                "store",
                "the file store path is empty; expected file:PATH",
            ));
        }
        let dir = parent_dir(&path);
        if !dir.is_dir() {
            return Err(Error::Store {
                message: format!(
                    "file store {}: directory {} does not exist",
                    path.display(),
                    dir.display()
                ),
            });
        }
        let store = FileStore {
            lock_path: with_suffix(&path, ".lock"),
            tmp_path: with_suffix(&path, ".tmp"),
            path,
            options,
        };
        store.records()?;
        Ok(store)
    }

    /// Parses a store spec `file:PATH` (as the CLI and bindings take it).
    pub fn from_spec(spec: &str) -> Result<FileStore> {
        match spec.strip_prefix("file:") {
            Some(path) if !path.is_empty() => FileStore::open(path),
            _ => Err(Error::invalid_argument(
                "store",
                format!("{spec:?} is not a store spec; expected file:PATH"),
            )),
        }
    }

    /// The data file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every tag's row, sorted by tag (empty if the file does not exist yet). Reads
    /// without locking: the file is only ever replaced whole.
    pub fn records(&self) -> Result<Vec<TagRecord>> {
        read_records(&self.path).map_err(|message| Error::Store { message })
    }

    /// Raises `tag`'s `max_id` to at least `max_id` (creating the row), for example to
    /// continue above IDs issued elsewhere. Never lowers it. Returns the row's `max_id`.
    pub fn raise_max_id(&self, tag: &str, max_id: u64) -> Result<u64> {
        check_tag(tag)?;
        if max_id > MAX_ID {
            return Err(Error::invalid_argument(
                "max_id",
                format!("{max_id} is out of range; allowed 0..={MAX_ID}"),
            ));
        }
        self.update(tag, |row| {
            row.max_id = row.max_id.max(max_id);
            Ok(row.max_id)
        })
        .map_err(|message| Error::Store { message })
    }

    /// Locks, reads, applies `change` to the tag's row, writes durably, unlocks.
    fn update<T>(
        &self,
        tag: &str,
        change: impl FnOnce(&mut TagRecord) -> std::result::Result<T, String>,
    ) -> std::result::Result<T, String> {
        // A fork waits until this operation is done (the child must not inherit the lock).
        let _op = crate::fork::enter();
        let ctx = |what: &str, e: std::io::Error| {
            format!("file store {}: {what}: {e}", self.path.display())
        };
        // No in-process lock: every call opens the lock file anew, and flock excludes
        // separate open file descriptions even within one process. So a child process
        // forked while a fetch thread held the lock inherits no lock it could never release.
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.lock_path)
            .map_err(|e| ctx("cannot open the lock file", e))?;
        let _held = LockGuard::acquire(lock).map_err(|e| ctx("cannot lock", e))?;
        let mut records = read_records(&self.path)?;
        let index = match records.binary_search_by(|r| r.tag.as_str().cmp(tag)) {
            Ok(i) => i,
            Err(i) => {
                records.insert(
                    i,
                    TagRecord {
                        tag: tag.to_string(),
                        max_id: self.options.initial_max_id,
                        step: 0,
                        updated_ms: 0,
                    },
                );
                i
            }
        };
        let out = change(&mut records[index])?;
        records[index].updated_ms = now_ms();
        let text = render(&records);
        let mut tmp = File::create(&self.tmp_path).map_err(|e| ctx("cannot create", e))?;
        tmp.write_all(text.as_bytes())
            .map_err(|e| ctx("cannot write", e))?;
        tmp.sync_all().map_err(|e| ctx("cannot fsync", e))?;
        drop(tmp);
        fs::rename(&self.tmp_path, &self.path).map_err(|e| ctx("cannot rename", e))?;
        File::open(parent_dir(&self.path))
            .and_then(|d| d.sync_all())
            .map_err(|e| ctx("cannot fsync the directory", e))?;
        Ok(out)
    }
}

impl SegmentStore for FileStore {
    /// A tag the file does not hold yet starts at `max_id` 0 (the file store creates
    /// tags on first use).
    fn allocate(&self, tag: &str, step: u64) -> std::result::Result<Allocation, StoreFailure> {
        check_tag(tag).map_err(|e| e.to_string())?;
        if step == 0 {
            return Err("step 0 requested; a step must be at least 1".into());
        }
        self.update(tag, |row| {
            let max_id = row
                .max_id
                .checked_add(step)
                .filter(|&m| m <= MAX_ID)
                .ok_or_else(|| {
                    format!(
                        "tag {tag:?} is exhausted: max_id {} + step {step} exceeds i64::MAX",
                        row.max_id
                    )
                })?;
            row.max_id = max_id;
            row.step = step;
            Ok(Allocation::new(max_id, step))
        })
        .map_err(StoreFailure::from)
    }
}

/// An exclusive lock on the lock file, released explicitly on drop.
///
/// The explicit unlock matters: a lock belongs to the open file description, which a
/// child forked while the lock is held shares. Closing our descriptor would leave the lock
/// held for as long as the child lives; unlocking releases it for every copy.
struct LockGuard(File);

impl LockGuard {
    fn acquire(file: File) -> std::io::Result<LockGuard> {
        sys::lock(&file, true)?;
        Ok(LockGuard(file))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = sys::unlock(&self.0);
    }
}

/// `flock(2)` on Unix (keeps the crate's minimum Rust version); elsewhere `File::lock`
/// (Rust 1.89).
#[cfg(unix)]
mod sys {
    use std::fs::File;
    use std::io::ErrorKind;
    use std::os::fd::AsRawFd;

    extern "C" {
        fn flock(fd: i32, operation: i32) -> i32;
    }
    const LOCK_EX: i32 = 2;
    const LOCK_NB: i32 = 4;
    const LOCK_UN: i32 = 8;

    fn call(file: &File, op: i32) -> std::io::Result<()> {
        loop {
            // SAFETY: flock only reads the descriptor number, which `file` keeps open.
            if unsafe { flock(file.as_raw_fd(), op) } == 0 {
                return Ok(());
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    /// An exclusive lock; `wait = false` fails with `WouldBlock` instead of waiting.
    pub(super) fn lock(file: &File, wait: bool) -> std::io::Result<()> {
        call(file, if wait { LOCK_EX } else { LOCK_EX | LOCK_NB })
    }

    pub(super) fn unlock(file: &File) -> std::io::Result<()> {
        call(file, LOCK_UN)
    }
}

#[cfg(not(unix))]
#[allow(clippy::incompatible_msrv)]
mod sys {
    use std::fs::File;

    pub(super) fn lock(file: &File, wait: bool) -> std::io::Result<()> {
        if wait {
            file.lock()
        } else {
            file.try_lock().map_err(|e| match e {
                std::fs::TryLockError::Error(e) => e,
                std::fs::TryLockError::WouldBlock => std::io::ErrorKind::WouldBlock.into(),
            })
        }
    }

    pub(super) fn unlock(file: &File) -> std::io::Result<()> {
        file.unlock()
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

const HEADER: &str = "# segflake file store, format 1\n\
# <tag> <max_id> <step> <updated_at>: the next allocation of <step'> IDs for <tag>\n\
# hands out [max_id, max_id + step') and stores max_id + step'.\n";

fn render(records: &[TagRecord]) -> String {
    let mut s = String::from(HEADER);
    for r in records {
        let when = if r.updated_ms == 0 {
            "-".to_string()
        } else {
            format_iso8601_ms(r.updated_ms)
        };
        s.push_str(&format!("{} {} {} {}\n", r.tag, r.max_id, r.step, when));
    }
    s
}

fn read_records(path: &Path) -> std::result::Result<Vec<TagRecord>, String> {
    let mut text = String::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_string(&mut text)
                .map_err(|e| format!("file store {}: cannot read: {e}", path.display()))?;
        }
        Err(e) if e.kind() == IoKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("file store {}: cannot open: {e}", path.display())),
    }
    parse(&text).map_err(|e| format!("file store {}: {e}", path.display()))
}

fn parse(text: &str) -> std::result::Result<Vec<TagRecord>, String> {
    let mut records: Vec<TagRecord> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: String| {
            format!(
                "line {}: {why}; expected `<tag> <max_id> [<step> [<updated_at>]]` \
                 (refusing to touch a file it cannot read)",
                n + 1
            )
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 2 || fields.len() > 4 {
            return Err(bad(format!("{} fields", fields.len())));
        }
        let tag = fields[0];
        check_tag(tag).map_err(|e| bad(e.to_string()))?;
        let max_id: u64 = fields[1]
            .parse()
            .ok()
            .filter(|&m| m <= MAX_ID)
            .ok_or_else(|| {
                bad(format!(
                    "max_id {:?} is not an integer 0..={MAX_ID}",
                    fields[1]
                ))
            })?;
        let step: u64 = match fields.get(2) {
            Some(s) => s
                .parse()
                .map_err(|_| bad(format!("step {s:?} is not an integer")))?,
            None => 0,
        };
        let updated_ms = match fields.get(3) {
            None | Some(&"-") => 0,
            Some(s) => parse_time_ms(s).map_err(|e| bad(e.to_string()))?,
        };
        if records.iter().any(|r| r.tag == tag) {
            return Err(bad(format!("tag {tag:?} appears twice")));
        }
        records.push(TagRecord {
            tag: tag.to_string(),
            max_id,
            step,
            updated_ms,
        });
    }
    records.sort_by(|a, b| a.tag.cmp(&b.tag));
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_render_round_trip() {
        let recs = parse("# c\n\nb 10 5 2025-01-01T00:00:00.000Z\na 1\n").unwrap();
        assert_eq!(recs[0].tag, "a");
        assert_eq!(recs[0].max_id, 1);
        assert_eq!(recs[1].updated_ms, 1_735_689_600_000);
        assert_eq!(parse(&render(&recs)).unwrap(), recs);
    }

    #[test]
    fn a_duplicate_of_the_lock_descriptor_does_not_keep_the_lock() {
        // What a child forked during an allocation holds: a copy of the descriptor.
        let dir = std::env::temp_dir().join(format!("segflake-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.lock");
        let open = || {
            OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap()
        };
        let guard = LockGuard::acquire(open()).unwrap();
        let inherited = guard.0.try_clone().unwrap();
        let other = open();
        assert!(sys::lock(&other, false).is_err(), "the lock is held");
        drop(guard);
        sys::lock(&other, false).expect("released although a copy is still open");
        sys::unlock(&other).unwrap();
        drop(inherited);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parse_refuses_garbage() {
        for bad in [
            "a",
            "a x",
            "a 1 2 3 4",
            "a 9223372036854775808",
            "a 1\na 2",
            "a 1 x",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
