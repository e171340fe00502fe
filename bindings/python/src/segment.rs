//! Segment IDs: `SegmentGenerator` (the core's std driver over a Python or built-in
//! store), `SegmentTag`, `SegmentStats`, `SegmentEngine` (the sans-I/O engine that
//! `AsyncSegmentGenerator` drives from asyncio), `MemoryStore` and `FileStore`.
//!
//! GIL discipline: the store is called from the driver's background threads, which take
//! the GIL only for the call. A caller that has to wait for a segment releases the GIL
//! while it waits, so the fetch thread can run the store.

use crate::batch::{ids_bytes, ids_into, ids_list, DETACH_AT};
use crate::convert::{batch_arg, configure, given, record_class, refuse, settings_dict, tag_arg};
use crate::convert::{type_name, u64_arg, value_of, Obj};
use crate::errors::{exception, to_py_err, Exception, IntoPyResult};
use crate::Checked;
use pyo3::exceptions::PyBaseException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use segflake::fork::Origin;
use segflake::host::{self, Dialect, Spelling, Value};
use segflake::segment::{FileStore, FileStoreOptions, MemoryStore, MultiStore};
use segflake::{
    Allocation, SegmentEngine, SegmentGenerator, SegmentOptions, SegmentStore, StoreFailure,
    TagHandle,
};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

// ---------------------------------------------------------------------------------------
// Store results

/// Reads a store's answer: `(max_id, step)`, a mapping or an object with `max_id` and
/// `step` attributes, as the core's `allocation_of` expects it; the core refuses the rest.
pub fn allocation_of(tag: &str, obj: &Obj<'_>) -> Result<Allocation, segflake::Error> {
    host::allocation_of(tag, &answer_of(obj), Spelling::Snake)
}

/// A store's answer as a host value; one that cannot be read is described for the refusal.
fn answer_of(obj: &Obj<'_>) -> Value {
    answer_value(obj).unwrap_or_else(|e| Value::Opaque(e.to_string()))
}

fn answer_value(obj: &Obj<'_>) -> PyResult<Value> {
    if obj.hasattr("__await__")? {
        let _ = obj.call_method0("close");
        return Ok(Value::Opaque(
            "an awaitable; a SegmentGenerator calls the store from a thread and needs a \
             synchronous allocate(tag, step): use AsyncSegmentGenerator for async stores"
                .into(),
        ));
    }
    // (max_id, step) or (max_id, step, tag_step), in that order.
    let answer = |items: &[Obj<'_>]| -> PyResult<Value> {
        let keys = ["max_id", "step", "tag_step"];
        let pairs = keys
            .iter()
            .zip(items)
            .map(|(k, v)| Ok(((*k).into(), value_of(v)?)));
        Ok(Value::Map(pairs.collect::<PyResult<_>>()?))
    };
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        let n = obj.len()?;
        if n == 2 || n == 3 {
            let items = (0..n)
                .map(|i| obj.get_item(i))
                .collect::<PyResult<Vec<_>>>()?;
            return answer(&items);
        }
        return Ok(Value::Opaque(format!("a sequence of {n} items")));
    }
    if let (Ok(max_id), Ok(step)) = (obj.getattr("max_id"), obj.getattr("step")) {
        let mut items = vec![max_id, step];
        if let Ok(tag_step) = obj.getattr("tag_step") {
            items.push(tag_step);
        }
        return answer(&items);
    }
    value_of(obj)
}

/// The message of a Python exception raised by a store.
pub fn describe_exception(py: Python<'_>, err: &PyErr) -> String {
    let value = err.value(py).as_any();
    let text = value.str().map_or_else(|_| "?".into(), |s| s.to_string());
    format!("{}: {text}", type_name(value))
}

// ---------------------------------------------------------------------------------------
// Stores

/// A Python store: `store.allocate(tag, step)` or `store(tag, step)`, and the store's
/// `give_back(tag, expected_max_id, max_id)` where it has one.
struct PyStore {
    allocate: Py<PyAny>,
    give_back: Option<Py<PyAny>>,
    errors: StoreErrors,
}

/// The exception a Python store last raised, per tag (cleared by a successful call): it
/// becomes the `__cause__` of the `SegmentsExhaustedError` that failure leads to.
type StoreErrors = Arc<Mutex<HashMap<String, Py<PyAny>>>>;

impl SegmentStore for PyStore {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        Python::attach(|py| {
            let result = self.allocate.bind(py).call1((tag, step));
            let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
            match result {
                Ok(result) => {
                    errors.remove(tag);
                    allocation_of(tag, &result).map_err(StoreFailure::from)
                }
                Err(e) => {
                    let message = describe_exception(py, &e);
                    errors.insert(tag.to_owned(), e.into_value(py).into_any());
                    Err(message.into())
                }
            }
        })
    }

    /// The Python store's `give_back(tag, expected_max_id, max_id)`: whether it gave the
    /// IDs back (its answer's truth). A store without the method gives nothing back; an
    /// exception, or an awaitable (an async store in a threaded generator), is a failure
    /// (a gap, nothing worse).
    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        let Some(give_back) = &self.give_back else {
            return Ok(false);
        };
        Python::attach(|py| {
            let result = give_back
                .bind(py)
                .call1((tag, expected_max_id, max_id))
                .map_err(|e| StoreFailure::Failed(describe_exception(py, &e)))?;
            if result.hasattr("__await__").unwrap_or(false) {
                let _ = result.call_method0("close");
                return Err(StoreFailure::Failed(
                    "give_back returned an awaitable; a SegmentGenerator calls the store from \
                     a thread and needs a synchronous give_back(tag, expected_max_id, max_id)"
                        .into(),
                ));
            }
            result
                .is_truthy()
                .map_err(|e| StoreFailure::Failed(describe_exception(py, &e)))
        })
    }
}

/// Translates a segment error, chaining the store's own exception where there is one.
fn segment_err(py: Python<'_>, e: segflake::Error, errors: &Option<StoreErrors>) -> PyErr {
    let cause = match (&e, errors) {
        (segflake::Error::SegmentsExhausted { tag, .. }, Some(errors)) => errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tag)
            .map(|c| c.clone_ref(py)),
        _ => None,
    };
    let err = to_py_err(py, e);
    if let Some(cause) = cause {
        err.set_cause(py, Some(PyErr::from_value(cause.into_bound(py))));
    }
    err
}

const STORE_ALLOWED: &str = "an object with allocate(tag, step) -> (max_id, step), such a \
     callable, a segflake.MemoryStore, a segflake.FileStore or 'file:PATH'";

/// The `give_back` method of a Python store object, if it has a callable one.
fn giver(store: &Obj<'_>) -> Option<Py<PyAny>> {
    match store.getattr("give_back") {
        Ok(g) if g.is_callable() => Some(g.unbind()),
        _ => None,
    }
}

/// The allocate callable of a Python store argument.
fn allocator<'py>(store: &Obj<'py>) -> PyResult<Obj<'py>> {
    match store.getattr("allocate") {
        Ok(a) if a.is_callable() => Ok(a),
        _ if store.is_callable() && !store.is_instance_of::<PyString>() => Ok(store.clone()),
        _ => Err(refuse(store, "store", STORE_ALLOWED)),
    }
}

type AnyStore = Arc<dyn SegmentStore>;

fn store_of(store: &Obj<'_>) -> PyResult<(AnyStore, Option<StoreErrors>)> {
    let py = store.py();
    if let Ok(multi) = store.cast::<PyMultiStore>() {
        // One record of the stores' exceptions for all of them: the last one is the cause.
        let errors = StoreErrors::default();
        let mut stores = Vec::new();
        for s in multi.get().stores.bind(py).iter() {
            let (inner, own) = store_of(&s)?;
            stores.push(match own {
                // Multi-store engines never give back (the stores' rows interleave).
                Some(_) => Arc::new(PyStore {
                    allocate: allocator(&s)?.unbind(),
                    give_back: None,
                    errors: errors.clone(),
                }) as AnyStore,
                None => inner,
            });
        }
        let multi = MultiStore::new(stores).py_err(py)?;
        return Ok((Arc::new(multi), Some(errors)));
    }
    if let Ok(m) = store.cast::<PyMemoryStore>() {
        m.get().origin.checked(py, "MemoryStore")?;
        return Ok((m.get().inner.clone(), None));
    }
    if let Ok(f) = store.cast::<PyFileStore>() {
        return Ok((f.get().inner.clone(), None));
    }
    if let Ok(s) = store.cast::<PyString>() {
        let file = FileStore::from_spec(&s.to_cow()?).py_err(py)?;
        return Ok((Arc::new(file), None));
    }
    let (allocate, errors) = (allocator(store)?.unbind(), StoreErrors::default());
    let store = PyStore {
        allocate,
        give_back: giver(store),
        errors: errors.clone(),
    };
    Ok((Arc::new(store), Some(errors)))
}

/// A built-in store's `allocate(tag, step)` with the GIL released: `(max_id, step)`.
fn allocate_with(store: AnyStore, tag: &Obj<'_>, step: &Obj<'_>) -> PyResult<(u64, u64)> {
    let (py, tag, step) = (tag.py(), tag_arg(tag)?, u64_arg(step, "step")?);
    let t = tag.clone();
    match py.detach(move || store.allocate(&t, step)) {
        Ok(a) => Ok((a.max_id, a.step)),
        Err(StoreFailure::UnknownTag) => Err(to_py_err(py, segflake::Error::UnknownTag { tag })),
        Err(StoreFailure::Failed(message)) => {
            Err(to_py_err(py, segflake::Error::Store { message }))
        }
    }
}

/// A built-in store's `give_back(tag, expected_max_id, max_id)` with the GIL released.
fn give_back_with(
    store: AnyStore,
    tag: &Obj<'_>,
    expected_max_id: &Obj<'_>,
    max_id: &Obj<'_>,
) -> PyResult<bool> {
    let (py, tag) = (tag.py(), tag_arg(tag)?);
    let expected = u64_arg(expected_max_id, "expected_max_id")?;
    let max_id = u64_arg(max_id, "max_id")?;
    match py.detach(move || store.give_back(&tag, expected, max_id)) {
        Ok(done) => Ok(done),
        Err(StoreFailure::UnknownTag) => Ok(false),
        Err(StoreFailure::Failed(message)) => {
            Err(to_py_err(py, segflake::Error::Store { message }))
        }
    }
}

/// Tinyid's multi-database mode: stores whose ranges a generator takes in residue classes
/// (store `i` of `n` gives only the IDs `≡ i (mod n)`), moving to the next when one fails.
#[pyclass(name = "MultiStore", module = "segflake", frozen)]
pub struct PyMultiStore {
    stores: Py<PyTuple>,
}

#[pymethods]
impl PyMultiStore {
    #[new]
    fn new(py: Python<'_>, stores: &Obj<'_>) -> PyResult<Self> {
        let list: Vec<Obj<'_>> = stores
            .try_iter()
            .map_err(|_| {
                to_py_err(
                    py,
                    segflake::Error::invalid_argument(
                        "stores",
                        format!(
                            "got {}; expected a list of stores (one per database, in the order \
                             of their remainders)",
                            type_name(stores)
                        ),
                    ),
                )
            })?
            .collect::<PyResult<_>>()?;
        segflake::segment::check_store_count(list.len()).py_err(py)?;
        for s in &list {
            if s.cast::<PyMultiStore>().is_ok() {
                return Err(to_py_err(
                    py,
                    segflake::Error::invalid_argument(
                        "stores",
                        "a MultiStore cannot hold another MultiStore".to_string(),
                    ),
                ));
            }
            store_of(s)?; // every store is checked now, not at the first fetch
        }
        Ok(PyMultiStore {
            stores: PyTuple::new(py, list)?.unbind(),
        })
    }

    /// The stores, in residue order.
    #[getter]
    fn stores(&self, py: Python<'_>) -> Py<PyTuple> {
        self.stores.clone_ref(py)
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.stores.bind(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("MultiStore({})", self.stores.bind(py).repr()?))
    }
}

/// Leaf's table in memory (tags start at `max_id = initial_max_id`, default 1).
/// Thread-safe; for tests and single-process use. A copy inherited through fork would
/// hand out the parent's ranges again, so it refuses to work in a forked child.
#[pyclass(name = "MemoryStore", module = "segflake", frozen)]
pub struct PyMemoryStore {
    inner: Arc<MemoryStore>,
    origin: Origin,
}

#[pymethods]
impl PyMemoryStore {
    #[new]
    #[pyo3(signature = (initial_max_id=None))]
    fn new(initial_max_id: Option<&Obj<'_>>) -> PyResult<Self> {
        let initial = given(initial_max_id).map_or(Ok(1), |v| u64_arg(v, "initial_max_id"))?;
        Ok(PyMemoryStore {
            inner: Arc::new(MemoryStore::with_initial_max_id(initial)),
            origin: Origin::here(),
        })
    }

    /// Leaf's `allocate`: raises the tag's `max_id` by `step`; returns `(max_id, step)`.
    fn allocate(&self, py: Python<'_>, tag: &Obj<'_>, step: &Obj<'_>) -> PyResult<(u64, u64)> {
        self.origin.checked(py, "MemoryStore")?;
        allocate_with(self.inner.clone(), tag, step)
    }

    /// Lowers a tag's `max_id` from `expected_max_id` to `max_id` if it is still
    /// `expected_max_id` (IDs a closed generator fetched and did not issue); returns
    /// whether it did.
    fn give_back(
        &self,
        py: Python<'_>,
        tag: &Obj<'_>,
        expected_max_id: &Obj<'_>,
        max_id: &Obj<'_>,
    ) -> PyResult<bool> {
        self.origin.checked(py, "MemoryStore")?;
        give_back_with(self.inner.clone(), tag, expected_max_id, max_id)
    }

    /// Sets a tag's `max_id` (like an UPDATE on Leaf's table).
    fn set_max_id(&self, py: Python<'_>, tag: &Obj<'_>, max_id: &Obj<'_>) -> PyResult<()> {
        self.origin.checked(py, "MemoryStore")?;
        let tag = tag_arg(tag)?;
        let max_id = u64_arg(max_id, "max_id")?;
        let store = self.inner.clone();
        py.detach(move || store.set_max_id(&tag, max_id));
        Ok(())
    }

    /// A tag's current `max_id`, or None if the tag does not exist yet.
    fn max_id(&self, py: Python<'_>, tag: &Obj<'_>) -> PyResult<Option<u64>> {
        self.origin.checked(py, "MemoryStore")?;
        let tag = tag_arg(tag)?;
        let store = self.inner.clone();
        Ok(py.detach(move || store.max_id(&tag)))
    }
}

/// A durable, multi-process store in one text file (locked with flock).
#[pyclass(name = "FileStore", module = "segflake", frozen)]
pub struct PyFileStore {
    inner: Arc<FileStore>,
}

#[pymethods]
impl PyFileStore {
    #[new]
    #[pyo3(signature = (path, *, initial_max_id=None))]
    fn new(py: Python<'_>, path: &Obj<'_>, initial_max_id: Option<&Obj<'_>>) -> PyResult<Self> {
        let fspath = py.import("os")?.getattr("fspath")?;
        let path: String = fspath
            .call1((path,))
            .and_then(|p| p.extract())
            .map_err(|_| refuse(path, "path", "a str or os.PathLike"))?;
        let mut options = FileStoreOptions::default();
        if let Some(v) = given(initial_max_id) {
            options.initial_max_id = u64_arg(v, "initial_max_id")?;
        }
        Ok(PyFileStore {
            inner: Arc::new(FileStore::with_options(path, options).py_err(py)?),
        })
    }

    /// Leaf's `allocate`: raises the tag's `max_id` by `step`; returns `(max_id, step)`.
    fn allocate(&self, tag: &Obj<'_>, step: &Obj<'_>) -> PyResult<(u64, u64)> {
        allocate_with(self.inner.clone(), tag, step)
    }

    /// Lowers a tag's `max_id` from `expected_max_id` to `max_id` if it is still
    /// `expected_max_id` (IDs a closed generator fetched and did not issue); returns
    /// whether it did.
    fn give_back(
        &self,
        tag: &Obj<'_>,
        expected_max_id: &Obj<'_>,
        max_id: &Obj<'_>,
    ) -> PyResult<bool> {
        give_back_with(self.inner.clone(), tag, expected_max_id, max_id)
    }

    /// Raises a tag's `max_id` to at least `max_id` (never lowers it); returns the row's.
    fn raise_max_id(&self, py: Python<'_>, tag: &Obj<'_>, max_id: &Obj<'_>) -> PyResult<u64> {
        let tag = tag_arg(tag)?;
        let max_id = u64_arg(max_id, "max_id")?;
        let store = self.inner.clone();
        py.detach(move || store.raise_max_id(&tag, max_id))
            .py_err(py)
    }

    #[getter]
    fn path(&self) -> String {
        self.inner.path().display().to_string()
    }
}

record_class!(PySegmentStats, "SegmentStats");

// ---------------------------------------------------------------------------------------
// The threaded generator

#[inline]
fn take_one(py: Python<'_>, t: &PySegmentTag) -> PyResult<u64> {
    let h = &t.handle;
    match h.try_next_id() {
        Ok(Some(id)) => Ok(id),
        Ok(None) => py
            .detach(|| h.next_id())
            .map_err(|e| segment_err(py, e, &t.errors)),
        Err(e) => Err(segment_err(py, e, &t.errors)),
    }
}

fn fill(py: Python<'_>, t: &PySegmentTag, out: &mut [u64]) -> PyResult<()> {
    let h = &t.handle;
    let err = |e| segment_err(py, e, &t.errors);
    if out.len() >= DETACH_AT {
        // In chunks, checking for signals (Ctrl-C) between them.
        for part in out.chunks_mut(1 << 20) {
            py.detach(|| h.next_ids(part)).map_err(err)?;
            py.check_signals()?;
        }
        return Ok(());
    }
    let n = h.engine().try_next_batch(out);
    if n == out.len() {
        // Starts a prefetch if the engine wants one; never waits.
        return h.next_ids(&mut []).map_err(err);
    }
    let rest = &mut out[n..];
    py.detach(|| h.next_ids(rest)).map_err(err)
}

/// One tag of a `SegmentGenerator`: the hot path without the tag lookup. A handle keeps
/// its generator alive.
#[pyclass(name = "SegmentTag", module = "segflake", frozen)]
pub struct PySegmentTag {
    handle: TagHandle,
    origin: Origin,
    errors: Option<StoreErrors>,
    /// The generator (None for the generator's own lookup cache, to avoid a cycle).
    owner: Option<Py<PySegmentGenerator>>,
}

impl PySegmentTag {
    fn with_owner(&self, owner: Option<Py<PySegmentGenerator>>) -> Self {
        let (handle, origin, errors) = (self.handle.clone(), self.origin, self.errors.clone());
        PySegmentTag {
            handle,
            origin,
            errors,
            owner,
        }
    }
}

#[pymethods]
impl PySegmentTag {
    /// The tag's name.
    #[getter]
    fn name(&self) -> &str {
        self.handle.name()
    }

    /// The generator this handle belongs to.
    #[getter]
    fn generator(&self, py: Python<'_>) -> Option<Py<PySegmentGenerator>> {
        self.owner.as_ref().map(|g| g.clone_ref(py))
    }

    /// The next ID of this tag (waits for a segment at most `wait_timeout_ms`).
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.origin.checked(py, "SegmentGenerator")?;
        take_one(py, self)
    }

    /// An ID if one is ready now, else None (never waits; starts a fetch if needed).
    fn try_next_id(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.origin.checked(py, "SegmentGenerator")?;
        self.handle.try_next_id().py_err(py)
    }

    /// `n` strictly increasing IDs.
    fn next_ids<'py>(&self, py: Python<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyList>> {
        self.origin.checked(py, "SegmentGenerator")?;
        ids_list(py, n, |out| fill(py, self, out))
    }

    /// `n` IDs as native-endian uint64 in a bytes object.
    fn next_ids_bytes<'py>(&self, py: Python<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.origin.checked(py, "SegmentGenerator")?;
        ids_bytes(py, n, |out| fill(py, self, out))
    }

    /// Fills a writable buffer of 64-bit integers with IDs; returns the count.
    fn next_ids_into(&self, py: Python<'_>, out: &Obj<'_>) -> PyResult<usize> {
        self.origin.checked(py, "SegmentGenerator")?;
        ids_into(out, |ids| fill(py, self, ids))
    }

    /// A snapshot of the tag's segments.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PySegmentStats>> {
        self.origin.checked(py, "SegmentGenerator")?;
        PySegmentStats::new(py, &self.handle.stats())
    }

    fn __repr__(&self) -> String {
        format!("SegmentTag({:?})", self.handle.name())
    }
}

/// Dense Leaf-compatible IDs per business tag from ranges a store hands out.
#[pyclass(name = "SegmentGenerator", module = "segflake", frozen, weakref)]
pub struct PySegmentGenerator {
    inner: ManuallyDrop<Arc<SegmentGenerator>>,
    /// tag name -> SegmentTag, so `next_id(tag)` costs one dict lookup.
    handles: Py<PyDict>,
    origin: Origin,
    errors: Option<StoreErrors>,
}

impl PySegmentGenerator {
    #[inline(always)]
    fn handle<'py>(&self, tag: &Obj<'py>) -> PyResult<Bound<'py, PySegmentTag>> {
        let py = tag.py();
        self.origin.checked(py, "SegmentGenerator")?;
        // An unhashable tag fails the lookup: new_handle says what a tag must be.
        if let Ok(Some(h)) = self.handles.bind(py).get_item(tag) {
            if let Ok(h) = h.cast_into::<PySegmentTag>() {
                return Ok(h);
            }
        }
        self.new_handle(tag)
    }

    #[cold]
    fn new_handle<'py>(&self, tag: &Obj<'py>) -> PyResult<Bound<'py, PySegmentTag>> {
        let py = tag.py();
        let name = tag_arg(tag)?;
        let (handle, origin, errors) = (
            self.inner.tag(&name).py_err(py)?,
            self.origin,
            self.errors.clone(),
        );
        let obj = Bound::new(
            py,
            PySegmentTag {
                handle,
                origin,
                errors,
                owner: None,
            },
        )?;
        self.handles.bind(py).set_item(tag, &obj)?;
        Ok(obj)
    }
}

impl Drop for PySegmentGenerator {
    fn drop(&mut self) {
        if self.origin.is_forked() {
            // The threads and locks belong to the parent: touch nothing, free nothing.
            return;
        }
        let inner = &self.inner;
        Python::attach(|py| py.detach(|| inner.close()));
        // SAFETY: dropped exactly once, here.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
    }
}

#[pymethods]
impl PySegmentGenerator {
    #[new]
    #[pyo3(signature = (store, **options),
        // <generated: text_signature SegmentGenerator>
        text_signature = "(store, *, step=1000, max_step=1000000, dynamic_step=True, \
            prefetch_percent=10, retry_backoff_ms=1000, wait_timeout_ms=1000, \
            store_timeout_ms=10000, give_back=True, fetch_threads=1)")]
    fn new(py: Python<'_>, store: &Obj<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let options: SegmentOptions = configure(py, Vec::new(), options, Dialect::PYTHON)?;
        let (store, errors) = store_of(store)?;
        let inner = Arc::new(SegmentGenerator::new(store, options).py_err(py)?);
        let origin = Origin::here();
        crate::close_at_exit(
            Arc::downgrade(&inner) as Weak<dyn crate::CloseAtExit>,
            origin,
        );
        Ok(PySegmentGenerator {
            inner: ManuallyDrop::new(inner),
            handles: PyDict::new(py).unbind(),
            origin,
            errors,
        })
    }

    /// The next ID of `tag` (waits for a segment at most `wait_timeout_ms`, with the GIL
    /// released; `SegmentsExhaustedError` after that).
    fn next_id(&self, tag: &Obj<'_>) -> PyResult<u64> {
        self.handle(tag)?.get().next_id(tag.py())
    }

    /// An ID of `tag` if one is ready now, else None (never waits).
    fn try_next_id(&self, tag: &Obj<'_>) -> PyResult<Option<u64>> {
        self.handle(tag)?.get().try_next_id(tag.py())
    }

    /// `n` strictly increasing IDs of `tag`.
    fn next_ids<'py>(&self, tag: &Obj<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyList>> {
        self.handle(tag)?.get().next_ids(tag.py(), n)
    }

    /// `n` IDs of `tag` as native-endian uint64 in a bytes object.
    fn next_ids_bytes<'py>(&self, tag: &Obj<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.handle(tag)?.get().next_ids_bytes(tag.py(), n)
    }

    /// Fills a writable buffer of 64-bit integers with IDs of `tag`; returns the count.
    fn next_ids_into(&self, tag: &Obj<'_>, out: &Obj<'_>) -> PyResult<usize> {
        self.handle(tag)?.get().next_ids_into(tag.py(), out)
    }

    /// A handle on `tag` that skips the tag lookup (starts its first fetch). It keeps the
    /// generator alive.
    fn tag<'py>(slf: &Bound<'py, Self>, name: &Obj<'py>) -> PyResult<Bound<'py, PySegmentTag>> {
        let owner = Some(slf.clone().unbind());
        Bound::new(slf.py(), slf.get().handle(name)?.get().with_owner(owner))
    }

    /// A snapshot of `tag`'s segments (`InvalidArgumentError` for a tag not used yet).
    fn stats<'py>(&self, py: Python<'py>, tag: &Obj<'py>) -> PyResult<Bound<'py, PySegmentStats>> {
        self.origin.checked(py, "SegmentGenerator")?;
        PySegmentStats::new(py, &self.inner.stats(&tag_arg(tag)?).py_err(py)?)
    }

    /// The tags used so far, sorted.
    fn tags(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.origin.checked(py, "SegmentGenerator")?;
        Ok(self.inner.tags())
    }

    /// The options in effect.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        settings_dict(py, self.inner.options(), Dialect::PYTHON)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.origin.is_forked() || self.inner.is_closed()
    }

    /// Stops the fetch threads; waiting and later calls get `ClosedError`. Idempotent.
    /// In a forked child it does nothing (the threads belong to the parent).
    fn close(&self, py: Python<'_>) {
        if self.origin.is_forked() {
            return;
        }
        py.detach(|| self.inner.close());
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().origin.checked(slf.py(), "SegmentGenerator")?;
        Ok(slf)
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    fn __repr__(&self) -> String {
        format!(
            "SegmentGenerator(tags={:?}, closed={})",
            self.inner.tags(),
            self.inner.is_closed()
        )
    }
}

// ---------------------------------------------------------------------------------------
// The sans-I/O engine, for the asyncio driver

/// The per-tag segment engine without I/O: the caller performs the store calls
/// (`AsyncSegmentGenerator` drives it from an asyncio event loop). Times are taken from
/// a monotonic clock started with the engine.
#[pyclass(name = "SegmentEngine", module = "segflake", frozen)]
pub struct PySegmentEngine {
    inner: SegmentEngine,
    started: Instant,
    origin: Origin,
}

impl PySegmentEngine {
    /// `now_ms` as given (any monotonic milliseconds), else the engine's own clock.
    fn now(&self, now_ms: Option<&Obj<'_>>) -> PyResult<u64> {
        match given(now_ms) {
            Some(t) => u64_arg(t, "now_ms"),
            None => Ok(self.started.elapsed().as_millis() as u64),
        }
    }
}

#[pymethods]
impl PySegmentEngine {
    #[new]
    #[pyo3(signature = (tag, stores=None, **options),
        // <generated: text_signature SegmentEngine>
        text_signature = "(tag, stores=1, *, step=1000, max_step=1000000, dynamic_step=True, \
            prefetch_percent=10, retry_backoff_ms=1000, wait_timeout_ms=1000, \
            store_timeout_ms=10000, give_back=True)")]
    fn new(
        py: Python<'_>,
        tag: &Obj<'_>,
        stores: Option<&Obj<'_>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let options: SegmentOptions = configure(py, Vec::new(), options, Dialect::PYTHON_ASYNC)?;
        let tag = tag_arg(tag)?;
        let stores = given(stores).map_or(Ok(1), |v| u64_arg(v, "stores"))?;
        let stores = usize::try_from(stores).unwrap_or(usize::MAX);
        Ok(PySegmentEngine {
            inner: SegmentEngine::with_stores(&tag, &options, stores).py_err(py)?,
            started: Instant::now(),
            origin: Origin::here(),
        })
    }

    #[getter]
    fn tag(&self) -> &str {
        self.inner.tag()
    }

    /// The store the fetch in flight asks (an index into a `MultiStore`), or None.
    #[getter]
    fn fetch_store(&self) -> Option<usize> {
        self.inner.fetch_store()
    }

    /// The options in effect.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        settings_dict(py, self.inner.options(), Dialect::PYTHON_ASYNC)
    }

    /// One ID from a ready segment, or None. Lock-free.
    #[inline]
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.origin.checked(py, "AsyncSegmentGenerator")?;
        Ok(self.inner.try_next())
    }

    /// Up to `n` IDs from ready segments (fewer when they run dry).
    fn try_next_batch<'py>(&self, py: Python<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyList>> {
        self.origin.checked(py, "AsyncSegmentGenerator")?;
        let n = batch_arg(n)?;
        let mut v = vec![0u64; n];
        let got = if n >= DETACH_AT {
            py.detach(|| self.inner.try_next_batch(&mut v))
        } else {
            self.inner.try_next_batch(&mut v)
        };
        v.truncate(got);
        PyList::new(py, v)
    }

    /// Whether the engine wants `begin_fetch` to be called (one atomic load).
    #[getter]
    fn wants_fetch(&self) -> bool {
        self.inner.wants_fetch()
    }

    /// The step to request from the store, or None when no fetch is due. `now_ms`: any
    /// monotonic milliseconds (default: a clock started with the engine); use one time
    /// base for all calls.
    #[pyo3(signature = (now_ms=None))]
    fn begin_fetch(&self, py: Python<'_>, now_ms: Option<&Obj<'_>>) -> PyResult<Option<u64>> {
        self.origin.checked(py, "AsyncSegmentGenerator")?;
        Ok(self.inner.begin_fetch(self.now(now_ms)?).map(|r| r.step))
    }

    /// Hands the store's answer (`(max_id, step)`, a dict or an object with those
    /// attributes) to the engine. Raises `StoreContractViolationError` or `StoreError`
    /// when it was refused (the engine has recorded that as a failed fetch).
    #[pyo3(signature = (result, now_ms=None))]
    fn complete_fetch(
        &self,
        py: Python<'_>,
        result: &Obj<'_>,
        now_ms: Option<&Obj<'_>>,
    ) -> PyResult<()> {
        self.origin.checked(py, "AsyncSegmentGenerator")?;
        let now = self.now(now_ms)?;
        self.inner
            .complete_answer(now, &answer_of(result), Spelling::Snake)
            .py_err(py)
    }

    /// Records a failed fetch (the store raised `message`).
    #[pyo3(signature = (message, now_ms=None))]
    fn fail_fetch(
        &self,
        py: Python<'_>,
        message: &Obj<'_>,
        now_ms: Option<&Obj<'_>>,
    ) -> PyResult<()> {
        self.origin.checked(py, "AsyncSegmentGenerator")?;
        let now = self.now(now_ms)?;
        let text = match message.is_instance_of::<PyBaseException>() {
            true => format!("{}: {}", type_name(message), message.str()?),
            false => message.str()?.to_string(),
        };
        match self.inner.fail_fetch(now, &text) {
            Err(e) if !matches!(e, segflake::Error::Store { .. }) => Err(to_py_err(py, e)),
            _ => Ok(()),
        }
    }

    /// Records that the store did not answer the fetch of `step` within `store_timeout_ms`
    /// (its late answer must be discarded).
    #[pyo3(signature = (step, now_ms=None))]
    fn timeout_fetch(&self, step: u64, now_ms: Option<&Obj<'_>>) -> PyResult<()> {
        let timeout = self.inner.options().store_timeout_ms;
        let message = host::store_timeout_message(self.inner.tag(), step, timeout, Spelling::Snake);
        let _ = self
            .inner
            .complete_fetch(self.now(now_ms)?, Err(message.into()));
        Ok(())
    }

    /// Failed fetches so far.
    #[getter]
    fn failure_count(&self) -> u64 {
        self.inner.failure_count()
    }

    /// Completed fetches so far.
    #[getter]
    fn completion_count(&self) -> u64 {
        self.inner.completion_count()
    }

    #[getter]
    fn fetch_in_flight(&self) -> bool {
        self.inner.fetch_in_flight()
    }

    /// The error a caller that found no ID gets (`SegmentsExhaustedError` with the cause,
    /// or `ClosedError`), as an exception instance to raise.
    #[pyo3(signature = (now_ms=None))]
    fn exhausted_error<'py>(&self, py: Python<'py>, now_ms: Option<&Obj<'py>>) -> Exception<'py> {
        Ok(exception(py, self.inner.exhausted_error(self.now(now_ms)?)))
    }

    /// A snapshot of the tag's segments.
    #[pyo3(signature = (now_ms=None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        now_ms: Option<&Obj<'py>>,
    ) -> PyResult<Bound<'py, PySegmentStats>> {
        PySegmentStats::new(py, &self.inner.stats(self.now(now_ms)?))
    }

    /// Every later take returns None.
    fn close(&self) {
        self.inner.close();
    }

    /// What the closed engine can give back to its store, once: `(expected_max_id,
    /// max_id)`, for the store's `give_back(tag, expected_max_id, max_id)` (the tag's
    /// `max_id` goes from `expected_max_id` down to `max_id` if it is still
    /// `expected_max_id`). None while the engine is open, while a fetch is in flight, for
    /// a multi-store engine, with `give_back=False`, when nothing is left, on every call
    /// after the first, and in a forked child (the range is the parent's).
    fn take_give_back(&self) -> Option<(u64, u64)> {
        if self.origin.is_forked() {
            return None;
        }
        self.inner
            .take_give_back()
            .map(|g| (g.expected_max_id, g.max_id))
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn __repr__(&self) -> String {
        format!("SegmentEngine({:?})", self.inner.tag())
    }
}
