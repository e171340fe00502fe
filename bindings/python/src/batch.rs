//! Batches of IDs as a list, a `bytes` object or written into a caller's buffer, shared
//! by `Snowflake`, `SegmentGenerator` and `SegmentTag`.

use crate::convert::{batch_arg, short_repr, type_name, Obj};
use crate::errors::{invalid, IntoPyResult};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PySlice};

/// Batches at least this large are filled with the GIL released.
pub const DETACH_AT: usize = 1 << 15;

/// `n` IDs from `fill` as a list.
pub fn ids_list<'py>(
    py: Python<'py>,
    n: &Obj<'py>,
    fill: impl FnOnce(&mut [u64]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyList>> {
    let mut v = vec![0u64; batch_arg(n)?];
    fill(&mut v)?;
    PyList::new(py, v)
}

/// `n` IDs from `fill` as native-endian unsigned 64-bit integers in a `bytes` object.
pub fn ids_bytes<'py>(
    py: Python<'py>,
    n: &Obj<'py>,
    fill: impl FnOnce(&mut [u64]) -> PyResult<()>,
) -> PyResult<Bound<'py, PyBytes>> {
    let n = batch_arg(n)?;
    PyBytes::new_with(py, n * 8, |buf| fill_bytes(buf, fill))
}

/// Fills a writable buffer of 64-bit integers with IDs from `fill`; returns the count.
pub fn ids_into(out: &Obj<'_>, fill: impl FnOnce(&mut [u64]) -> PyResult<()>) -> PyResult<usize> {
    let py = out.py();
    let (bytes_view, n) = writable_u64_view(out)?;
    segflake::check_batch_size(n).py_err(py)?;
    let data = PyBytes::new_with(py, n * 8, |buf| fill_bytes(buf, fill))?;
    bytes_view.set_item(PySlice::full(py), data)?;
    Ok(n)
}

fn fill_bytes(buf: &mut [u8], fill: impl FnOnce(&mut [u64]) -> PyResult<()>) -> PyResult<()> {
    // SAFETY: every bit pattern is a valid u64; `align_to_mut` only yields an aligned
    // middle part.
    let (head, ids, tail) = unsafe { buf.align_to_mut::<u64>() };
    if head.is_empty() && tail.is_empty() {
        return fill(ids);
    }
    let mut v = vec![0u64; buf.len() / 8];
    fill(&mut v)?;
    for (chunk, id) in buf.chunks_exact_mut(8).zip(&v) {
        chunk.copy_from_slice(&id.to_ne_bytes());
    }
    Ok(())
}

/// Checks that `out` is a writable C-contiguous buffer of native 64-bit integers and
/// returns a byte view of it.
fn writable_u64_view<'py>(out: &Obj<'py>) -> PyResult<(Obj<'py>, usize)> {
    let py = out.py();
    let refuse = |problem: &str| {
        let what = format!("{} of type {}", short_repr(out), type_name(out));
        let allowed = "expected a writable, C-contiguous buffer of 64-bit integers such as \
                       numpy.empty(n, dtype=numpy.uint64) or array.array('Q', bytes(8 * n))";
        invalid(py, "buffer", format!("{what} {problem}; {allowed}"))
    };
    let memoryview = py.import("builtins")?.getattr("memoryview")?;
    let mv =
        (memoryview.call1((out,))).map_err(|_| refuse("does not support the buffer protocol"))?;
    let get = |name: &str| mv.getattr(name);
    let (itemsize, format): (usize, String) =
        (get("itemsize")?.extract()?, get("format")?.extract()?);
    let code = format.trim_start_matches(['@', '=']);
    let code = match code.strip_prefix('<') {
        Some(c) if cfg!(target_endian = "little") => c,
        Some(_) => "",
        None => code,
    };
    if get("readonly")?.extract()? {
        return Err(refuse("is read-only"));
    }
    if !get("c_contiguous")?.extract::<bool>()? {
        return Err(refuse("is not C-contiguous"));
    }
    if itemsize != 8 || !matches!(code, "Q" | "q" | "L" | "l" | "K" | "k") {
        return Err(refuse(&format!(
            "has items of format '{format}' and size {itemsize}"
        )));
    }
    let n = get("nbytes")?.extract::<usize>()? / 8;
    Ok((mv.call_method1("cast", ("B",))?, n))
}
