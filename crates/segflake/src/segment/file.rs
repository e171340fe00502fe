//! The file store (`file:PATH`): Leaf's table as a small text file, for one machine.
//!
//! # On disk
//! ```text
//! # segflake file store, format 2, generation 3
//! # <tag> <max_id> <step> <updated_at>: the next allocation of <step'> IDs for <tag>
//! # hands out [max_id, max_id + step') and stores max_id + step'.
//! # "+ <tag> ..." lines: allocations appended since; the last line of a tag wins.
//! invoice 11 10 2026-11-22T02:29:00.000Z
//! order 4001 2000 2026-11-22T02:30:00.000Z
//! + order 6001 2000 2026-11-22T02:31:00.000Z
//! ```
//! A snapshot (one line per tag, sorted) and then the allocations made since, one `+` line
//! each; `#` lines and blank lines are comments. `step` is the step of the last allocation
//! and `updated_at` its time (UTC); only `max_id` matters. Format 1 (no generation, no `+`
//! lines) is read as it is and rewritten as format 2 by the first allocation.
//!
//! # Cost
//! An allocation appends one line and `fdatasync`s the file: its cost does not grow with
//! the number of tags. Each [`FileStore`] keeps the rows it has read and, on the next
//! allocation, reads only the lines appended since (by any process). Once the appended
//! lines outgrow the snapshot (and 64 KiB), the allocation rewrites the file as a new
//! snapshot of the next generation (amortized: a constant number of bytes per allocation).
//!
//! # Durability and sharing
//! Every allocation, under an exclusive lock on `PATH.lock` (`flock`, so any number of
//! processes and threads can share one file), reads what other processes appended, appends
//! its own line and `fdatasync`s it, and only then returns the range; a rewrite goes to
//! `PATH.tmp`, is `fsync`ed, renamed over `PATH`, and the directory `fsync`ed. A crash at
//! any instant leaves the file as it was plus, at most, a last `+` line without its newline:
//! such a torn line is never applied (readers skip it, the next allocation cuts it off), and
//! its range was never handed out. A range is handed out only after the line that moves
//! `max_id` past it is durable, so no range is ever handed out twice (a crash in between
//! merely skips the range). A file that cannot be parsed is never written to. segflake
//! versions that read only format 1 refuse a file with `+` lines (five fields per line)
//! instead of misreading it. Edit the file only while no process uses it.

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind as IoKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{check_tag, Allocation, SegmentStore, StoreFailure, MAX_ID};
use crate::datetime::{format_iso8601_ms, parse_time_ms};
use crate::error::{quoted, Error, Result};

options_struct! {
    /// Settings of a [`FileStore`].
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct FileStoreOptions {
        /// `max_id` of a tag created on first use (default 1, like a fresh Leaf row: the first
        /// allocation of step 2000 hands out 1..=2000). At most `i64::MAX`.
        pub initial_max_id: u64 => with_initial_max_id,
    }
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        FileStoreOptions { initial_max_id: 1 }
    }
}

/// One tag's row in a file store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TagRecord {
    /// The business tag.
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
/// # segflake file store, format 2, generation 1
/// order 4001 2000 2026-11-22T02:30:00.000Z
/// + order 6001 2000 2026-11-22T02:31:00.000Z
/// ```
/// A sorted snapshot, one line per tag (tag, `max_id`: the first ID of the next range, the
/// last step, when), then one appended `+` line per allocation since; the last line of a
/// tag wins. An allocation appends and `fdatasync`s one line under an exclusive `flock` on
/// `PATH.lock` (shared safely by any number of processes and threads) before it returns the
/// range, so its cost does not grow with the number of tags and a crash at any instant never
/// lets a range be handed out twice. A file that does not parse is never written to.
#[derive(Debug)]
pub struct FileStore {
    path: PathBuf,
    lock_path: PathBuf,
    tmp_path: PathBuf,
    options: FileStoreOptions,
    /// The rows as of the last allocation through this object, and where the file was read
    /// up to (checked against the file before use).
    cache: Mutex<Option<Cache>>,
}

/// What a [`FileStore`] knows of its file between allocations.
#[derive(Debug)]
struct Cache {
    generation: u64,
    /// Bytes read: the end of the last complete line.
    end: u64,
    /// The bytes just before `end` (up to [`TAIL`]), compared with the file before `end` is
    /// trusted: a file rewritten by other means than an allocation is read again whole.
    tail: Vec<u8>,
    /// Bytes of the snapshot part (before the first `+` line).
    snapshot_len: u64,
    rows: BTreeMap<String, TagRecord>,
}

/// How many bytes before the read position are compared with the cache's copy.
const TAIL: u64 = 64;

/// Appended bytes that never trigger a rewrite, whatever the snapshot's size.
const MIN_LOG_BYTES: u64 = 64 * 1024;

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
        Error::check_range("initial_max_id", options.initial_max_id, 0, MAX_ID, "")?;
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
            cache: Mutex::new(None),
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
                format!(
                    "{spec} is not a store spec; expected file:PATH",
                    spec = quoted(spec)
                ),
            )),
        }
    }

    /// The data file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every tag's row, sorted by tag (empty if the file does not exist yet). Reads
    /// without locking: the file only ever grows by whole lines or is replaced whole.
    pub fn records(&self) -> Result<Vec<TagRecord>> {
        let read = || -> std::result::Result<Vec<TagRecord>, String> {
            let Some(mut file) = open_existing(&self.path, false)? else {
                return Ok(Vec::new());
            };
            let cache = load(&self.path, &mut file)?;
            Ok(cache.rows.into_values().collect())
        };
        read().map_err(|message| Error::Store { message })
    }

    /// Raises `tag`'s `max_id` to at least `max_id` (creating the row), for example to
    /// continue above IDs issued elsewhere. Never lowers it. Returns the row's `max_id`.
    pub fn raise_max_id(&self, tag: &str, max_id: u64) -> Result<u64> {
        check_tag(tag)?;
        Error::check_range("max_id", max_id, 0, MAX_ID, "")?;
        self.update(tag, |row| {
            row.max_id = row.max_id.max(max_id);
            Ok(Some(row.max_id))
        })
        .map(|m| m.unwrap_or(max_id))
        .map_err(|message| Error::Store { message })
    }

    /// Locks, catches up with the file, applies `change` to the tag's row, appends the row
    /// durably (or rewrites the file), unlocks. A change that returns `Ok(None)` (or an
    /// error) leaves the row and the file as they were.
    fn update<T>(
        &self,
        tag: &str,
        change: impl FnOnce(&mut TagRecord) -> std::result::Result<Option<T>, String>,
    ) -> std::result::Result<Option<T>, String> {
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
        let mut slot = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        // Whatever happens below, a failure leaves no cache behind: the next call reads the
        // file again.
        let mut cache = slot.take();
        let mut file = open_existing(&self.path, true)?;
        if let Some(f) = file.as_mut() {
            cache = Some(catch_up(&self.path, f, cache)?);
        }
        let mut cache = cache.unwrap_or_else(|| Cache {
            generation: 0,
            end: 0,
            tail: Vec::new(),
            snapshot_len: 0,
            rows: BTreeMap::new(),
        });
        let existed = cache.rows.contains_key(tag);
        let row = cache
            .rows
            .entry(tag.to_string())
            .or_insert_with(|| TagRecord {
                tag: tag.to_string(),
                max_id: self.options.initial_max_id,
                step: 0,
                updated_ms: 0,
            });
        let before = row.clone();
        let outcome = change(row);
        let Ok(Some(out)) = outcome else {
            if existed {
                *row = before;
            } else {
                cache.rows.remove(tag);
            }
            *slot = Some(cache);
            return outcome;
        };
        row.updated_ms = now_ms();
        let line = format!("+ {}\n", render_row(row));
        let appended = cache.end.saturating_sub(cache.snapshot_len);
        let rewrite = match file.as_mut() {
            None => true,
            // Format 1 (no generation): rewritten, so that a format-1 writer's later rewrite
            // (which drops the generation) cannot be mistaken for this one.
            Some(_) if cache.generation == 0 => true,
            // A last line without its newline (a hand edit): appending would join it.
            Some(_) if cache.tail.last().is_some_and(|&b| b != b'\n') => true,
            Some(_) => appended + line.len() as u64 > MIN_LOG_BYTES.max(cache.snapshot_len),
        };
        if rewrite {
            let generation = cache.generation + 1;
            let text = render(generation, cache.rows.values());
            let mut tmp = File::create(&self.tmp_path).map_err(|e| ctx("cannot create", e))?;
            tmp.write_all(text.as_bytes())
                .map_err(|e| ctx("cannot write", e))?;
            tmp.sync_all().map_err(|e| ctx("cannot fsync", e))?;
            drop(tmp);
            fs::rename(&self.tmp_path, &self.path).map_err(|e| ctx("cannot rename", e))?;
            File::open(parent_dir(&self.path))
                .and_then(|d| d.sync_all())
                .map_err(|e| ctx("cannot fsync the directory", e))?;
            let bytes = text.into_bytes();
            cache.generation = generation;
            cache.end = bytes.len() as u64;
            cache.snapshot_len = cache.end;
            cache.tail = tail_of(&bytes);
        } else if let Some(f) = file.as_mut() {
            // Cut off a torn last line (an append a crash interrupted) before appending.
            let len = f.metadata().map_err(|e| ctx("cannot stat", e))?.len();
            if len != cache.end {
                f.set_len(cache.end)
                    .map_err(|e| ctx("cannot cut off a torn last line", e))?;
            }
            f.seek(SeekFrom::Start(cache.end))
                .and_then(|_| f.write_all(line.as_bytes()))
                .map_err(|e| ctx("cannot append", e))?;
            f.sync_data().map_err(|e| ctx("cannot fdatasync", e))?;
            cache.end += line.len() as u64;
            let mut tail = std::mem::take(&mut cache.tail);
            tail.extend_from_slice(line.as_bytes());
            let cut = tail.len().saturating_sub(TAIL as usize);
            cache.tail = tail.split_off(cut);
        }
        *slot = Some(cache);
        Ok(Some(out))
    }
}

impl SegmentStore for FileStore {
    /// A tag the file does not hold yet starts at `initial_max_id` (the file store creates
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
                        "tag {tag} is exhausted: max_id {} + step {step} exceeds i64::MAX",
                        row.max_id,
                        tag = quoted(tag)
                    )
                })?;
            row.max_id = max_id;
            row.step = step;
            Ok(Some(Allocation::new(max_id, step)))
        })
        .map(|a| a.expect("an allocation always changes the row"))
        .map_err(StoreFailure::from)
    }

    /// A compare-and-set of the tag's `max_id` under the file's lock. It needs no
    /// per-give-back token (see [`SegmentStore::give_back`]): the caller runs it in its
    /// own process, once per close, with no driver, pool or network in between that could
    /// resend it, and a call that failed is not retried.
    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> std::result::Result<bool, StoreFailure> {
        check_tag(tag).map_err(|e| e.to_string())?;
        if max_id >= expected_max_id {
            return Ok(false);
        }
        self.update(tag, |row| {
            if row.max_id != expected_max_id {
                return Ok(None);
            }
            row.max_id = max_id;
            Ok(Some(()))
        })
        .map(|done| done.is_some())
        .map_err(StoreFailure::from)
    }
}

/// The file, opened for reading (and writing), or `None` if it does not exist yet.
fn open_existing(path: &Path, write: bool) -> std::result::Result<Option<File>, String> {
    match OpenOptions::new().read(true).write(write).open(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == IoKind::NotFound => Ok(None),
        Err(e) => Err(format!("file store {}: cannot open: {e}", path.display())),
    }
}

/// The cache brought up to date with the file: only the lines appended since `cache.end`
/// when the file is the one the cache read (same generation, same bytes before `end`),
/// else the whole file.
fn catch_up(
    path: &Path,
    file: &mut File,
    cache: Option<Cache>,
) -> std::result::Result<Cache, String> {
    let ctx = |what: &str, e: std::io::Error| format!("file store {}: {what}: {e}", path.display());
    let Some(mut cache) = cache else {
        return load(path, file);
    };
    let len = file.metadata().map_err(|e| ctx("cannot stat", e))?.len();
    let mut head = [0u8; 96];
    let n = read_at(file, 0, &mut head).map_err(|e| ctx("cannot read", e))?;
    let mut before = vec![0u8; cache.tail.len()];
    let same = cache.generation != 0
        && generation_of(&head[..n]) == cache.generation
        && len >= cache.end
        && read_at(file, cache.end - before.len() as u64, &mut before)
            .map_err(|e| ctx("cannot read", e))?
            == before.len()
        && before == cache.tail;
    if !same {
        return load(path, file);
    }
    let mut new = Vec::new();
    file.seek(SeekFrom::Start(cache.end))
        .and_then(|_| file.read_to_end(&mut new))
        .map_err(|e| ctx("cannot read", e))?;
    let text = std::str::from_utf8(&new).map_err(|_| {
        format!(
            "file store {}: appended lines are not UTF-8",
            path.display()
        )
    })?;
    let used = apply_lines(text, &mut cache.rows, None)
        .map_err(|e| format!("file store {}: {e}", path.display()))?;
    if used > 0 {
        cache.end += used as u64;
        let mut tail = std::mem::take(&mut cache.tail);
        tail.extend_from_slice(&new[..used]);
        let cut = tail.len().saturating_sub(TAIL as usize);
        cache.tail = tail.split_off(cut);
    }
    Ok(cache)
}

/// Reads the whole file.
fn load(path: &Path, file: &mut File) -> std::result::Result<Cache, String> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| format!("file store {}: cannot read: {e}", path.display()))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("file store {}: not UTF-8 text", path.display()))?;
    let mut rows = BTreeMap::new();
    let mut snapshot_len = None;
    let used = apply_lines(text, &mut rows, Some(&mut snapshot_len))
        .map_err(|e| format!("file store {}: {e}", path.display()))?;
    Ok(Cache {
        generation: generation_of(&bytes),
        end: used as u64,
        tail: tail_of(&bytes[..used]),
        snapshot_len: snapshot_len.unwrap_or(used) as u64,
        rows,
    })
}

fn tail_of(bytes: &[u8]) -> Vec<u8> {
    bytes[bytes.len().saturating_sub(TAIL as usize)..].to_vec()
}

/// Reads into `buf` from `offset`, as many bytes as the file has (at most `buf.len()`).
fn read_at(file: &mut File, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    file.seek(SeekFrom::Start(offset))?;
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == IoKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
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

const FORMAT_2: &str = "# segflake file store, format 2, generation ";

/// The generation a file's first line names (0: a format-1 file, or none).
fn generation_of(bytes: &[u8]) -> u64 {
    let line = bytes.split(|&b| b == b'\n').next().unwrap_or(&[]);
    std::str::from_utf8(line)
        .ok()
        .and_then(|l| l.strip_prefix(FORMAT_2))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn render_row(r: &TagRecord) -> String {
    let when = if r.updated_ms == 0 {
        "-".to_string()
    } else {
        format_iso8601_ms(r.updated_ms)
    };
    format!("{} {} {} {}", r.tag, r.max_id, r.step, when)
}

/// A snapshot of the rows as a file of `generation`.
fn render<'a>(generation: u64, records: impl Iterator<Item = &'a TagRecord>) -> String {
    let mut s = format!(
        "{FORMAT_2}{generation}\n\
         # <tag> <max_id> <step> <updated_at>: the next allocation of <step'> IDs for <tag>\n\
         # hands out [max_id, max_id + step') and stores max_id + step'.\n\
         # \"+ <tag> ...\" lines: allocations appended since; the last line of a tag wins.\n"
    );
    for r in records {
        s.push_str(&render_row(r));
        s.push('\n');
    }
    s
}

/// Applies the lines of `text` (which starts at a line boundary of the file) to `rows`:
/// a snapshot line sets a tag's row (a tag may have one), a `+` line replaces it. Returns
/// how many bytes were used: all of them, except a last `+` line without its newline (an
/// append a crash interrupted). With `snapshot_len`, sets it to where the first `+` line
/// starts.
fn apply_lines(
    text: &str,
    rows: &mut BTreeMap<String, TagRecord>,
    mut snapshot_len: Option<&mut Option<usize>>,
) -> std::result::Result<usize, String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut at = 0usize;
    for (n, piece) in text.split_inclusive('\n').enumerate() {
        let complete = piece.ends_with('\n');
        let line = piece.trim();
        let appended = line.starts_with("+ ") || line == "+";
        if appended && !complete {
            break; // a torn append: never applied
        }
        if appended {
            if let Some(len) = snapshot_len.as_deref_mut() {
                len.get_or_insert(at);
            }
        }
        at += piece.len();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let record = if appended {
            parse_row(&line[1..], true)
        } else {
            parse_row(line, false)
        }
        .map_err(|why| {
            format!(
                "line {}: {why}; expected `<tag> <max_id> [<step> [<updated_at>]]` or \
                 `+ <tag> <max_id> <step> <updated_at>` (refusing to touch a file it cannot \
                 read)",
                n + 1
            )
        })?;
        if !appended && !seen.insert(record.tag.clone()) {
            return Err(format!(
                "line {}: tag {} appears twice (refusing to touch a file it cannot read)",
                n + 1,
                quoted(&record.tag)
            ));
        }
        rows.insert(record.tag.clone(), record);
    }
    Ok(at)
}

/// One row: `<tag> <max_id> [<step> [<updated_at>]]` (an appended row has all four).
fn parse_row(line: &str, appended: bool) -> std::result::Result<TagRecord, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let allowed = if appended { 4..=4 } else { 2..=4 };
    if !allowed.contains(&fields.len()) {
        return Err(format!("{} fields", fields.len()));
    }
    let tag = fields[0];
    check_tag(tag).map_err(|e| e.to_string())?;
    let max_id: u64 = fields[1]
        .parse()
        .ok()
        .filter(|&m| m <= MAX_ID)
        .ok_or_else(|| {
            format!(
                "max_id {} is not an integer 0..={MAX_ID}",
                quoted(fields[1])
            )
        })?;
    let step: u64 = match fields.get(2) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("step {s} is not an integer", s = quoted(s)))?,
        None => 0,
    };
    let updated_ms = match fields.get(3) {
        None | Some(&"-") => 0,
        Some(s) => parse_time_ms(s).map_err(|e| e.to_string())?,
    };
    Ok(TagRecord {
        tag: tag.to_string(),
        max_id,
        step,
        updated_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> std::result::Result<Vec<TagRecord>, String> {
        let mut rows = BTreeMap::new();
        apply_lines(text, &mut rows, None)?;
        Ok(rows.into_values().collect())
    }

    #[test]
    fn parse_and_render_round_trip() {
        let recs = parse("# c\n\nb 10 5 2025-01-01T00:00:00.000Z\na 1\n").unwrap();
        assert_eq!(recs[0].tag, "a");
        assert_eq!(recs[0].max_id, 1);
        assert_eq!(recs[1].updated_ms, 1_735_689_600_000);
        let text = render(7, recs.iter());
        assert_eq!(generation_of(text.as_bytes()), 7);
        assert_eq!(parse(&text).unwrap(), recs);
    }

    #[test]
    fn appended_lines_win_and_a_torn_one_is_not_applied() {
        let text = "a 1 0 -\n+ a 11 10 -\nb 5\n+ a 21 10 -\n+ a 9";
        let mut rows = BTreeMap::new();
        let mut snapshot = None;
        let used = apply_lines(text, &mut rows, Some(&mut snapshot)).unwrap();
        assert_eq!(rows["a"].max_id, 21);
        assert_eq!(rows["b"].max_id, 5);
        assert_eq!(
            used,
            text.len() - "+ a 9".len(),
            "the torn line is left over"
        );
        assert_eq!(snapshot, Some("a 1 0 -\n".len()));
        // A last snapshot line without its newline is a row (format 1 files, hand edits).
        assert_eq!(parse("a 1\nb 7").unwrap()[1].max_id, 7);
        // A complete `+` line must carry all four fields.
        assert!(parse("+ a 11\n").is_err());
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
            "+ a 1 2 - x\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
