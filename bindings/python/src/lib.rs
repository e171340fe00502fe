//! `segflake._native`: the Python binding of the segflake core.
//!
//! This crate only translates: Python arguments into checked Rust values, core errors
//! into `segflake.SegflakeError` subclasses, Python stores into core callbacks. All ID
//! logic lives in the `segflake` crate. The public Python API is re-exported by
//! `python/segflake/__init__.py`; its types are in the hand-written `_native.pyi`.

use crate::convert::Obj;
use pyo3::prelude::*;

mod batch;
mod codec;
mod convert;
mod errors;
mod layout;
mod redis;
mod segment;
mod serial;
mod snowflake;

use convert::{pairs_dict, str_arg, to_py, u64_arg, value_of};
use errors::IntoPyResult;
use pyo3::exceptions::PyValueError;
use segflake::fork::{self, Origin};
use segflake::host::{Dialect, Value};
use segflake::lease::conversation::RegistryProtocol;
use std::sync::{Arc, Mutex, Weak};

/// Where Python users create per-process generators (the fork guard's advice).
const FORK_HINT: &str = "in gunicorn's post_fork hook or lazily on first use in each worker \
     (segflake.per_process), in a multiprocessing Pool initializer, or in Celery's \
     worker_process_init signal";

/// The fork guard as a Python error.
pub trait Checked {
    fn checked(&self, py: Python<'_>, what: &str) -> PyResult<()>;
}

impl Checked for Origin {
    #[inline(always)]
    fn checked(&self, py: Python<'_>, what: &str) -> PyResult<()> {
        self.check(what, FORK_HINT).py_err(py)
    }
}

/// A generator whose threads call into Python (a segment generator's fetch threads, a
/// leased snowflake's lease thread). Each one made in this process is closed by an `atexit`
/// hook, while the interpreter still serves those calls: left to interpreter finalization,
/// its threads would call into a finalized interpreter (a crash at exit).
pub(crate) trait CloseAtExit: Send + Sync {
    fn close(&self);
}

impl CloseAtExit for segflake::SegmentGenerator {
    fn close(&self) {
        segflake::SegmentGenerator::close(self)
    }
}

impl<C: segflake::Clock + Send + Sync + 'static> CloseAtExit for segflake::LeasedSnowflake<C> {
    fn close(&self) {
        segflake::LeasedSnowflake::close(self)
    }
}

/// The generators `_close_all_at_exit` closes (dropped ones and a parent's are skipped).
static CLOSE_AT_EXIT: Mutex<Vec<(Weak<dyn CloseAtExit>, Origin)>> = Mutex::new(Vec::new());

/// Has `_close_all_at_exit` close `generator` unless it was dropped before.
pub(crate) fn close_at_exit(generator: Weak<dyn CloseAtExit>, origin: Origin) {
    let mut list = CLOSE_AT_EXIT.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|(w, o)| !o.is_forked() && w.strong_count() > 0);
    list.push((generator, origin));
}

/// Closes every live generator of this process with threads that call into Python
/// (registered with `atexit`); in a forked child, none of the parent's.
#[pyfunction]
fn _close_all_at_exit(py: Python<'_>) {
    let live: Vec<Arc<dyn CloseAtExit>> = {
        let mut list = CLOSE_AT_EXIT.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(w, origin)| !origin.is_forked() && w.strong_count() > 0);
        list.iter().filter_map(|(w, _)| w.upgrade()).collect()
    };
    py.detach(|| live.iter().for_each(|g| g.close()));
}

/// `os.register_at_fork(before=...)`: waits, with the GIL released, for store operations.
#[pyfunction]
fn _before_fork(py: Python<'_>) {
    py.detach(fork::before_fork);
}

/// `os.register_at_fork(after_in_parent=...)`.
#[pyfunction]
fn _after_fork_in_parent() {
    fork::after_fork_in_parent();
}

/// `os.register_at_fork(after_in_child=...)`: every existing generator now refuses.
#[pyfunction]
fn _after_fork_in_child() {
    fork::after_fork_in_child();
}

/// The fork generation of this process (0 where segflake was loaded).
#[pyfunction]
fn _fork_generation() -> u64 {
    fork::generation()
}

/// The settings the core accepts for the options set `set` (`layout`, `snowflake`,
/// `segment`, `serial`) from `input`, validated as of `now_ms`.
#[pyfunction]
fn _options<'py>(
    set: &str,
    input: &Bound<'py, pyo3::types::PyDict>,
    now_ms: u64,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let py = input.py();
    let pairs = convert::pairs_of(Some(input))?;
    let settings =
        segflake::catalog::settings_of(set, pairs, Dialect::PYTHON, now_ms).py_err(py)?;
    pairs_dict(py, &settings)
}

/// The core's option and record tables as JSON.
#[pyfunction]
fn _tables() -> String {
    segflake::catalog::tables_json()
}

/// The Redis settings a registry reads at start-up (`CONFIG GET` each).
#[pyfunction]
fn _redis_durability_settings() -> Vec<&'static str> {
    segflake::lease::schema::redis::DURABILITY_SETTINGS.to_vec()
}

/// What a Redis with `settings` (name, value) would lose on a restart or under memory
/// pressure, as one warning; `None` when the marks are kept.
#[pyfunction]
fn _redis_durability_warning(settings: Vec<(String, String)>) -> Option<String> {
    segflake::lease::schema::redis::durability_warning(&settings)
}

/// The core's registry protocols (`segflake::lease::conversation::RegistryProtocol`), driven
/// by the adapters of `segflake.registries`: `start` begins a registry call and `resume`
/// hands in the reply to each request; both return the next step, a request (`op`) or the
/// call's end (`answer` or `error`), as the host values of the protocol's module
/// (`zookeeper`, `etcd`, `redis`, `sql`).
#[pyclass(name = "_RegistryProtocol", module = "segflake._native", frozen)]
struct PyRegistryProtocol {
    inner: Mutex<RegistryProtocol>,
}

impl PyRegistryProtocol {
    fn protocol(&self) -> std::sync::MutexGuard<'_, RegistryProtocol> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyRegistryProtocol {
    /// The protocol of `kind` (`zookeeper`, `etcd`, `redis`, `postgres`, `mysql`) with
    /// `config`; `ValueError` with the core's message when either is invalid.
    #[new]
    fn new(kind: &str, config: &Obj<'_>) -> PyResult<Self> {
        let protocol =
            RegistryProtocol::new(kind, &value_of(config)?).map_err(PyValueError::new_err)?;
        Ok(PyRegistryProtocol {
            inner: Mutex::new(protocol),
        })
    }

    /// The first step of the registry call `name` with `args` in call order; `context` is
    /// ZooKeeper's `{session, now_ms}` (the others take none). Drops a conversation left
    /// unfinished.
    #[pyo3(signature = (name, args, context=None))]
    fn start<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        args: Vec<Obj<'py>>,
        context: Option<&Obj<'py>>,
    ) -> PyResult<Obj<'py>> {
        let args = args.iter().map(value_of).collect::<PyResult<Vec<_>>>()?;
        let context = context.map(value_of).transpose()?.unwrap_or(Value::Null);
        let step = self.protocol().start_value(name, &args, &context);
        to_py(py, &step)
    }

    /// The next step after `reply`, the answer to the last request.
    fn resume<'py>(&self, reply: &Obj<'py>) -> PyResult<Obj<'py>> {
        let step = self.protocol().resume_value(&value_of(reply)?);
        to_py(reply.py(), &step)
    }

    /// What the adapter may need: ZooKeeper `{identity, root, worker_id}`, etcd `{prefix,
    /// leases}`, Redis `{}`, SQL `{schema}`.
    fn describe<'py>(&self, py: Python<'py>) -> PyResult<Obj<'py>> {
        let description = self.protocol().describe();
        to_py(py, &description)
    }
}

/// The StatefulSet ordinal of a hostname: `web-7` → 7.
#[pyfunction]
fn worker_id_from_hostname(hostname: &Obj<'_>) -> PyResult<u64> {
    let h = str_arg(hostname, "hostname", "a pod hostname such as 'web-7'")?;
    segflake::worker_id_from_hostname(&h).py_err(hostname.py())
}

/// The low `worker_bits` bits of a dotted-quad IPv4 address.
#[pyfunction]
#[pyo3(signature = (address, worker_bits=None))]
fn worker_id_from_ipv4(address: &Obj<'_>, worker_bits: Option<&Obj<'_>>) -> PyResult<u64> {
    let a = str_arg(
        address,
        "address",
        "a dotted-quad IPv4 address such as '10.0.3.7'",
    )?;
    let bits = match convert::given(worker_bits) {
        Some(b) => u8::try_from(u64_arg(b, "worker_bits")?).unwrap_or(u8::MAX),
        None => segflake::Preset::Twitter.spec().worker_bits,
    };
    segflake::worker_id_from_ipv4(&a, bits).py_err(address.py())
}

/// A decimal worker ID from `text`, the value of environment variable `name` (`None`: not
/// set), checked against `worker_bits` worker bits (default: the twitter layout's 10).
#[pyfunction]
#[pyo3(signature = (name, text, worker_bits=None))]
fn worker_id_from_text(
    name: &Obj<'_>,
    text: Option<&Obj<'_>>,
    worker_bits: Option<&Obj<'_>>,
) -> PyResult<u64> {
    let py = name.py();
    let n = str_arg(
        name,
        "name",
        "an environment variable name such as 'POD_INDEX'",
    )?;
    let t = match convert::given(text) {
        Some(t) => Some(str_arg(
            t,
            "text",
            "the variable's value, or None when unset",
        )?),
        None => None,
    };
    let bits = match convert::given(worker_bits) {
        Some(b) => u8::try_from(u64_arg(b, "worker_bits")?).unwrap_or(u8::MAX),
        None => segflake::Preset::Twitter.spec().worker_bits,
    };
    segflake::worker_id_from_text(&n, t.as_deref(), bits).py_err(py)
}

/// The decimal worker ID in environment variable `name` (`os.environ`), such as POD_INDEX
/// from Kubernetes' pod-index label, checked against `worker_bits` (default 10).
#[pyfunction]
#[pyo3(signature = (name, worker_bits=None))]
fn worker_id_from_env(name: &Obj<'_>, worker_bits: Option<&Obj<'_>>) -> PyResult<u64> {
    let py = name.py();
    let n = str_arg(
        name,
        "name",
        "an environment variable name such as 'POD_INDEX'",
    )?;
    let value = py
        .import("os")?
        .getattr("environ")?
        .call_method1("get", (n,))?;
    worker_id_from_text(name, Some(&value), worker_bits)
}

/// Parses Unix milliseconds or an ISO-8601 UTC time (`2025-01-01`, `2025-01-01T00:00:00Z`).
#[pyfunction]
fn parse_time_ms(text: &Obj<'_>) -> PyResult<u64> {
    let t = str_arg(
        text,
        "time",
        "an ISO-8601 UTC time such as '2025-01-01T00:00:00Z'",
    )?;
    segflake::datetime::parse_time_ms(&t).py_err(text.py())
}

/// `2025-01-01T00:00:00.000Z` for Unix milliseconds.
#[pyfunction]
fn format_time_ms(ms: &Obj<'_>) -> PyResult<String> {
    Ok(segflake::datetime::format_iso8601_ms(u64_arg(ms, "ms")?))
}

/// A do-nothing call returning an int: the floor of what a call into the extension costs.
#[pyfunction]
fn _bench_noop() -> u64 {
    (1 << 62) + 12345
}

#[pymodule]
mod _native {
    #[pymodule_export]
    use super::codec::{
        encode, encode_base32, encode_base62, encode_decimal, parse, parse_base32, parse_base62,
        parse_decimal, PyObfuscator,
    };
    #[pymodule_export]
    use super::convert::PyRecord;
    #[pymodule_export]
    use super::layout::{compose, decode, PyDecodedId, PyLayout};
    #[pymodule_export]
    use super::redis::{_min_replicas_to_write, _redis_target, _replica_wait, _replica_wait_check};
    #[pymodule_export]
    use super::segment::{
        PyFileStore, PyMemoryStore, PyMultiStore, PySegmentEngine, PySegmentGenerator,
        PySegmentStats, PySegmentTag,
    };
    #[pymodule_export]
    use super::serial::{PySerialGenerator, PySerialParts};
    #[pymodule_export]
    use super::snowflake::{PyLeaseStats, PyManualClock, PySnowflake};
    #[pymodule_export]
    use super::{
        _after_fork_in_child, _after_fork_in_parent, _before_fork, _bench_noop, _close_all_at_exit,
        _fork_generation, _options, _redis_durability_settings, _redis_durability_warning, _tables,
        format_time_ms, parse_time_ms, worker_id_from_env, worker_id_from_hostname,
        worker_id_from_ipv4, worker_id_from_text, PyRegistryProtocol,
    };
    use pyo3::prelude::*;
    use pyo3::types::{PyDict, PyTuple};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        let py = m.py();
        super::errors::register(m)?;
        let os = py.import("os")?;
        if os.hasattr("register_at_fork")? {
            let hooks = PyDict::new(py);
            hooks.set_item("before", m.getattr("_before_fork")?)?;
            hooks.set_item("after_in_parent", m.getattr("_after_fork_in_parent")?)?;
            hooks.set_item("after_in_child", m.getattr("_after_fork_in_child")?)?;
            os.getattr("register_at_fork")?.call((), Some(&hooks))?;
        }
        let close_all = m.getattr("_close_all_at_exit")?;
        py.import("atexit")?
            .getattr("register")?
            .call1((close_all,))?;
        m.add("MAX_BATCH", segflake::MAX_BATCH)?;
        let presets = segflake::Preset::ALL.map(|p| p.name());
        m.add("PRESETS", PyTuple::new(py, presets)?)?;
        m.add(
            "FORMATS",
            PyTuple::new(py, segflake::Format::ALL.map(|f| f.name()))?,
        )?;
        let codes = segflake::ErrorKind::ALL.map(|k| k.code());
        m.add("ERROR_CODES", PyTuple::new(py, codes)?)?;
        m.add("CORE_VERSION", segflake::VERSION)?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
