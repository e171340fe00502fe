//! The registry protocols (ZooKeeper, etcd, Redis, PostgreSQL, MySQL) for C registries: the
//! protocol decides every request and what every reply means; the C code performs each
//! request with its own client and hands back the reply. Requests, replies and answers are
//! JSON text, spelled as `tests/vectors/README.md` describes.

use crate::error::{boundary, boundary_void, invalid, segflake_status, FfiResult};
use crate::ptr::*;
use segflake_core::host::Value;
use segflake_core::lease::conversation::RegistryProtocol;
use std::ffi::{c_char, CString};

/// A registry protocol: an opaque handle made by `segflake_registry_protocol_new`, released
/// with `segflake_registry_protocol_free`.
///
/// Thread safety: one thread at a time (it holds the conversation in progress). The JSON
/// text it hands out stays valid until the next call on the same handle.
pub struct segflake_registry_protocol {
    inner: RegistryProtocol,
    /// The last JSON text handed out.
    text: CString,
}

fn json_arg(text: &str, name: &str) -> FfiResult<Value> {
    Value::from_json(text).map_err(|e| invalid(format!("{name} is {e}")))
}

fn hand_out(p: &mut segflake_registry_protocol, v: &Value) -> *const c_char {
    p.text = CString::new(v.to_json().replace('\0', "\\u0000")).unwrap_or_default();
    p.text.as_ptr()
}

/// Creates the protocol of `kind` (`"zookeeper"`, `"etcd"`, `"redis"`, `"postgres"` or
/// `"mysql"`) with `config_json`, a JSON object: ZooKeeper `{"root", "identity"}` (Leaf's
/// `/snowflake/{name}` and `IP:PORT`), etcd `{"prefix"}`, Redis `{"prefix", "wait_ms"}` (half
/// the registry timeout), SQL `{"host_name"}` (written into each claim's audit row).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for an unknown kind, a config that is not JSON or
/// lacks a field, a malformed identity or root, or a NULL pointer.
/// Ownership: the caller frees the protocol with `segflake_registry_protocol_free`.
/// Thread safety: any thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_registry_protocol_new(
    kind: *const c_char,
    config_json: *const c_char,
    out: *mut *mut segflake_registry_protocol,
) -> segflake_status {
    unsafe {
        make(out, || {
            let kind = in_str(kind, "kind")?;
            let config = json_arg(in_str(config_json, "config_json")?, "config_json")?;
            Ok(segflake_registry_protocol {
                inner: RegistryProtocol::new(kind, &config).map_err(invalid)?,
                text: CString::default(),
            })
        })
    }
}

/// Releases a protocol. NULL is ignored.
///
/// Thread safety: no other thread may be using it any more.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_registry_protocol_free(
    protocol: *mut segflake_registry_protocol,
) {
    boundary_void(|| unsafe { free_box(protocol) })
}

/// Begins the registry call `call` (`"claim"`, `"renew"`, `"release"` or `"peers"`) with
/// `args_json`, a JSON array of its arguments in call order (as the lease callbacks receive
/// them), and `context_json` (ZooKeeper: `{"session": <the client's session ID>, "now_ms":
/// <the wall clock>}`; the others take `null` or NULL). Writes the first step to
/// `*out_step_json`: a request (`{"op": ...}`) to perform and answer with
/// `segflake_registry_protocol_resume`, or the call's end: `{"answer": VALUE}` (what the
/// registry callback returns) or `{"error": TEXT}` (the call failed). A call left
/// unfinished is dropped.
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for text that is not JSON or a NULL pointer (other
/// than `context_json`). Thread safety: one thread at a time per protocol.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_registry_protocol_start(
    protocol: *mut segflake_registry_protocol,
    call: *const c_char,
    args_json: *const c_char,
    context_json: *const c_char,
    out_step_json: *mut *const c_char,
) -> segflake_status {
    boundary(|| unsafe {
        let p = in_mut(protocol, "protocol")?;
        let call = in_str(call, "call")?;
        let args = match json_arg(in_str(args_json, "args_json")?, "args_json")? {
            Value::List(args) => args,
            other => {
                return Err(invalid(format!(
                    "args_json is {}, not an array",
                    other.to_json()
                )))
            }
        };
        let context = if context_json.is_null() {
            Value::Null
        } else {
            json_arg(in_str(context_json, "context_json")?, "context_json")?
        };
        check_ptr(out_step_json.cast_const(), "out_step_json")?;
        let step = p.inner.start_value(call, &args, &context);
        out_step_json.write(hand_out(p, &step));
        Ok(())
    })
}

/// Hands in `reply_json`, the reply to the request of the last step, and writes the next
/// step to `*out_step_json` (as `segflake_registry_protocol_start`).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for text that is not JSON or a NULL pointer.
/// Thread safety: one thread at a time per protocol.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_registry_protocol_resume(
    protocol: *mut segflake_registry_protocol,
    reply_json: *const c_char,
    out_step_json: *mut *const c_char,
) -> segflake_status {
    boundary(|| unsafe {
        let p = in_mut(protocol, "protocol")?;
        let reply = json_arg(in_str(reply_json, "reply_json")?, "reply_json")?;
        check_ptr(out_step_json.cast_const(), "out_step_json")?;
        let step = p.inner.resume_value(&reply);
        out_step_json.write(hand_out(p, &step));
        Ok(())
    })
}

/// Writes what an adapter may need to know as JSON to `*out_json`: ZooKeeper `{"identity",
/// "root", "worker_id"}`, etcd `{"prefix", "leases"}` (the etcd leases held now, to revoke
/// at close), Redis `{}`, SQL `{"schema"}` (the statements to run on each new connection).
///
/// Errors: `SEGFLAKE_INVALID_ARGUMENT` for a NULL pointer. Thread safety: one thread at a
/// time per protocol.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn segflake_registry_protocol_describe(
    protocol: *mut segflake_registry_protocol,
    out_json: *mut *const c_char,
) -> segflake_status {
    boundary(|| unsafe {
        let p = in_mut(protocol, "protocol")?;
        check_ptr(out_json.cast_const(), "out_json")?;
        let facts = p.inner.describe();
        out_json.write(hand_out(p, &facts));
        Ok(())
    })
}
