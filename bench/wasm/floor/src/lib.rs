//! The segflake core's snowflake API behind plain exports: the floor of the snowflake
//! build's size (see Cargo.toml). Every export calls the core as `segflake-wasm/snowflake`
//! does; options arrive as `key=value` lines (a value of digits is an integer, any other a
//! string), the stand-in for the JS value conversion the floor leaves out. Results go out
//! through one text buffer and errors through another. Not for use: only its size counts.

#![cfg_attr(feature = "generation-only", allow(dead_code, unused_imports))]

use segflake::host::{self, Dialect, Record, SnowflakeConfig, Spelling, Value};
use segflake::{datetime, worker, Clock, Error, Format, Layout, LayoutSpec, Obfuscator, Snowflake};

#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

extern "C" {
    /// The host's `Date.now()`.
    fn date_now() -> f64;
}

/// The host's clock, as the binding's `JsClock`.
#[derive(Clone, Copy)]
pub struct HostClock;

impl Clock for HostClock {
    fn now_ms(&self) -> u64 {
        unsafe { date_now() as u64 }
    }
}

struct Buffers {
    out: String,
    error: String,
}

static mut BUFFERS: Buffers = Buffers {
    out: String::new(),
    error: String::new(),
};

fn buffers() -> &'static mut Buffers {
    // SAFETY: a WebAssembly module without threads runs one call at a time.
    unsafe { &mut *std::ptr::addr_of_mut!(BUFFERS) }
}

fn ok<T>(result: Result<T, Error>) -> Option<T> {
    result.map_err(|e| buffers().error = e.to_string()).ok()
}

fn text<'a>(ptr: *const u8, len: usize) -> &'a str {
    // SAFETY: the host passes UTF-8.
    unsafe { std::str::from_utf8_unchecked(bytes(ptr, len)) }
}

fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: the host passes `len` bytes it wrote into memory from `alloc`.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

fn ids_mut<'a>(ptr: *mut u64, len: usize) -> &'a mut [u64] {
    // SAFETY: the host passes a buffer of `len` IDs it allocated with `alloc`.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

fn out(s: String) -> usize {
    buffers().out = s;
    buffers().out.len()
}

fn boxed<T>(value: Option<T>) -> *mut T {
    value.map_or(std::ptr::null_mut(), |v| Box::into_raw(Box::new(v)))
}

fn pairs(lines: &str) -> Vec<(String, Value)> {
    let pair = |(key, value): (&str, &str)| {
        let value = match value.parse::<u64>() {
            Ok(n) => Value::uint(n),
            Err(_) => Value::Str(value.to_owned()),
        };
        (key.to_owned(), value)
    };
    lines
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(pair)
        .collect()
}

fn record<R: Record>(record: &R) -> String {
    let fields = R::FIELDS.iter().zip(record.values());
    Value::Map(fields.map(|(f, v)| (f.camel.to_owned(), v)).collect()).to_json()
}

#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    let mut bytes = Vec::<u8>::with_capacity(len);
    let ptr = bytes.as_mut_ptr();
    std::mem::forget(bytes);
    ptr
}

#[no_mangle]
pub extern "C" fn out_ptr() -> *const u8 {
    buffers().out.as_ptr()
}

#[no_mangle]
pub extern "C" fn error_ptr() -> *const u8 {
    buffers().error.as_ptr()
}

#[no_mangle]
pub extern "C" fn error_len() -> usize {
    buffers().error.len()
}

#[no_mangle]
pub extern "C" fn snowflake_new(ptr: *const u8, len: usize) -> *mut Snowflake<HostClock> {
    let build = || {
        let config: SnowflakeConfig = host::configure(pairs(text(ptr, len)), Dialect::JS)?;
        let layout = config.build_at(HostClock.now_ms(), Spelling::Camel)?;
        Snowflake::with_clock(layout, config.options, HostClock)
    };
    boxed(ok(build()))
}

#[no_mangle]
pub extern "C" fn snowflake_next_id(g: &Snowflake<HostClock>) -> u64 {
    ok(g.next_id()).unwrap_or(0)
}

/// Everything the snowflake entry exports besides `new Snowflake(options)` and `nextId()`:
/// left out with the feature `generation-only` (the floor of the one-line program).
#[cfg(not(feature = "generation-only"))]
mod api {
    use super::*;

    #[no_mangle]
    pub extern "C" fn snowflake_next_id_string(g: &Snowflake<HostClock>) -> usize {
        ok(g.next_id()).map_or(0, |id| out(Format::Decimal.encode(id)))
    }

    #[no_mangle]
    pub extern "C" fn snowflake_next_id_number(g: &Snowflake<HostClock>) -> u64 {
        ok(g.layout().check_js_number().and_then(|()| g.next_id())).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn snowflake_fill_ids(
        g: &Snowflake<HostClock>,
        ptr: *mut u64,
        len: usize,
    ) -> bool {
        let ids = ids_mut(ptr, len);
        ok(segflake::check_batch_size(len).and_then(|()| g.next_ids(ids))).is_some()
    }

    #[no_mangle]
    pub extern "C" fn snowflake_high_water_mark(g: &Snowflake<HostClock>) -> u64 {
        g.high_water_mark_ms()
    }

    #[no_mangle]
    pub extern "C" fn snowflake_layout(g: &Snowflake<HostClock>) -> *mut Layout {
        boxed(Some(*g.layout()))
    }

    #[no_mangle]
    pub extern "C" fn snowflake_decode(g: &Snowflake<HostClock>, id: u64) -> usize {
        ok(g.decode(id)).map_or(0, |d| out(record(&d)))
    }

    #[no_mangle]
    pub extern "C" fn layout_new(ptr: *const u8, len: usize) -> *mut Layout {
        let spec = host::layout_of(&Value::Map(pairs(text(ptr, len))), Dialect::JS);
        boxed(ok(spec.and_then(|s| s.build_at(HostClock.now_ms()))))
    }

    #[no_mangle]
    pub extern "C" fn layout_preset(ptr: *const u8, len: usize) -> *mut Layout {
        let spec = host::configure::<LayoutSpec, _>(pairs(text(ptr, len)), Dialect::JS);
        boxed(ok(spec.and_then(|s| s.build_at(HostClock.now_ms()))))
    }

    #[no_mangle]
    pub extern "C" fn layout_fields(layout: &Layout) -> usize {
        out(record(layout))
    }

    #[no_mangle]
    pub extern "C" fn layout_to_json(layout: &Layout) -> usize {
        out(Value::Map(host::spelled_settings(&layout.spec(), Spelling::Camel)).to_json())
    }

    #[no_mangle]
    pub extern "C" fn layout_decode(layout: &Layout, id: u64) -> usize {
        ok(layout.decode(id)).map_or(0, |d| out(record(&d)))
    }

    #[no_mangle]
    pub extern "C" fn layout_compose(
        layout: &Layout,
        ptr: *const u8,
        len: usize,
        worker: u64,
    ) -> u64 {
        let fields = Value::Map(pairs(text(ptr, len)));
        ok(host::compose_of(layout, &fields, worker, Dialect::JS)).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn encode(ptr: *const u8, len: usize, id: u64) -> usize {
        ok(Format::from_name(text(ptr, len))).map_or(0, |f| out(f.encode(id)))
    }

    #[no_mangle]
    pub extern "C" fn parse(ptr: *const u8, len: usize, tptr: *const u8, tlen: usize) -> u64 {
        let format = Format::from_name(text(ptr, len));
        ok(format.and_then(|f| f.parse(text(tptr, tlen)))).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn parse_time_ms(ptr: *const u8, len: usize) -> u64 {
        ok(datetime::parse_time_ms(text(ptr, len))).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn format_time_ms(ms: u64) -> usize {
        out(datetime::format_iso8601_ms(ms))
    }

    #[no_mangle]
    pub extern "C" fn worker_id_from_hostname(ptr: *const u8, len: usize) -> u64 {
        ok(worker::worker_id_from_hostname(text(ptr, len))).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn worker_id_from_ipv4(ptr: *const u8, len: usize, bits: u8) -> u64 {
        ok(worker::worker_id_from_ipv4(text(ptr, len), bits)).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn worker_id_from_text(
        ptr: *const u8,
        len: usize,
        tptr: *const u8,
        tlen: usize,
        bits: u8,
    ) -> u64 {
        let value = (tlen > 0).then(|| text(tptr, tlen));
        ok(worker::worker_id_from_text(text(ptr, len), value, bits)).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn obfuscator_new(ptr: *const u8, len: usize, hex: bool) -> *mut Obfuscator {
        let key = match hex {
            true => Obfuscator::from_hex_key(text(ptr, len)),
            false => Obfuscator::from_key_bytes(bytes(ptr, len)),
        };
        boxed(ok(key))
    }

    #[no_mangle]
    pub extern "C" fn obfuscate(o: &Obfuscator, id: u64) -> u64 {
        ok(o.obfuscate(id)).unwrap_or(0)
    }

    #[no_mangle]
    pub extern "C" fn deobfuscate(o: &Obfuscator, id: u64) -> u64 {
        ok(o.deobfuscate(id)).unwrap_or(0)
    }
}
