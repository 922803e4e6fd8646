//! Write sluice filters in Rust: WebAssembly guests of the http-wasm
//! `http_handler` ABI (see `sdk/ABI.md`), built for `wasm32-wasi` (Debian's
//! rustc 1.63 names it so; newer toolchains call it `wasm32-wasip1`).
//!
//! ```ignore
//! use sluice::{Filter, Request, Response};
//!
//! struct Hello { greeting: String }
//!
//! impl Filter for Hello {
//!     fn handle_request(&self, req: &Request, resp: &Response) -> bool {
//!         if req.path().starts_with("/admin/") {
//!             resp.respond(403, "text/plain", b"forbidden\n");
//!             return false;
//!         }
//!         req.headers().set("X-Hello", &self.greeting);
//!         true
//!     }
//! }
//!
//! sluice::register!(|| -> Result<Hello, String> {
//!     let cfg = sluice::config();
//!     Ok(Hello { greeting: sluice::json::get(&cfg, "greeting").and_then(|v| v.as_str()).unwrap_or_default() })
//! });
//! ```
//!
//! Instances are pooled: the filter value lives as long as its instance and
//! serves many requests, and an instance may take other requests while one
//! waits on its upstream. Keep per-request state keyed by the request
//! context (`Request::set_ctx`), never in the filter's fields alone.

pub mod json;
pub mod query;

#[doc(hidden)]
pub mod abi {
    #[link(wasm_import_module = "http_handler")]
    extern "C" {
        pub fn enable_features(features: u32) -> u32;
        pub fn get_config(buf: *mut u8, limit: u32) -> u32;
        pub fn log_enabled(level: i32) -> u32;
        pub fn log(level: i32, msg: *const u8, len: u32);
        pub fn get_method(buf: *mut u8, limit: u32) -> u32;
        pub fn set_method(p: *const u8, len: u32);
        pub fn get_uri(buf: *mut u8, limit: u32) -> u32;
        pub fn set_uri(p: *const u8, len: u32);
        pub fn get_protocol_version(buf: *mut u8, limit: u32) -> u32;
        pub fn get_source_addr(buf: *mut u8, limit: u32) -> u32;
        pub fn get_header_names(kind: u32, buf: *mut u8, limit: u32) -> u64;
        pub fn get_header_values(kind: u32, name: *const u8, name_len: u32, buf: *mut u8, limit: u32) -> u64;
        pub fn set_header_value(kind: u32, name: *const u8, name_len: u32, value: *const u8, value_len: u32);
        pub fn add_header_value(kind: u32, name: *const u8, name_len: u32, value: *const u8, value_len: u32);
        pub fn remove_header(kind: u32, name: *const u8, name_len: u32);
        pub fn read_body(kind: u32, buf: *mut u8, limit: u32) -> u64;
        pub fn write_body(kind: u32, body: *const u8, len: u32);
        pub fn get_status_code() -> u32;
        pub fn set_status_code(code: u32);
    }
}

/// Host features asked for with [`enable_features`].
pub mod feature {
    /// The request body stays readable by the next handler after the
    /// filter read it.
    pub const BUFFER_REQUEST: u32 = 1;
    /// The next handler's response waits for `handle_response`, which may
    /// then change its status, headers and body.
    pub const BUFFER_RESPONSE: u32 = 2;
    /// Trailers; sluice does not grant it.
    pub const TRAILERS: u32 = 4;
}

/// Asks for features; returns those now enabled. In setup: every request;
/// in `handle_request`: that request.
pub fn enable_features(features: u32) -> u32 {
    unsafe { abi::enable_features(features) }
}

fn get(f: unsafe extern "C" fn(*mut u8, u32) -> u32) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let n = unsafe { f(buf.as_mut_ptr(), buf.len() as u32) } as usize;
    if n > buf.len() {
        buf = vec![0u8; n];
        unsafe { f(buf.as_mut_ptr(), n as u32) };
    }
    buf.truncate(n);
    buf
}

fn get_string(f: unsafe extern "C" fn(*mut u8, u32) -> u32) -> String {
    String::from_utf8_lossy(&get(f)).into_owned()
}

fn split(buf: &[u8], count_len: u64) -> Vec<String> {
    let n = count_len as u32 as usize;
    buf[..n.min(buf.len())]
        .split(|&b| b == 0)
        .take((count_len >> 32) as usize)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The filter's config: the HCL `config` value as JSON (`{}` when absent).
pub fn config() -> String {
    String::from_utf8_lossy(&get(abi::get_config)).into_owned()
}

/// Log levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Level {
    Debug = -1,
    Info = 0,
    Warn = 1,
    Error = 2,
}

/// Whether the host keeps messages at `level`.
pub fn log_enabled(level: Level) -> bool {
    unsafe { abi::log_enabled(level as i32) == 1 }
}

/// Logs `msg` to the server's log, tagged with the filter's name.
pub fn log(level: Level, msg: &str) {
    unsafe { abi::log(level as i32, msg.as_ptr(), msg.len() as u32) }
}

/// Logs `msg` with key/value fields, when `level` is enabled. The fields
/// follow the message in logfmt, the same in every SDK (see
/// `sdk/README.md`): `denied path=/admin/x reason="no token"`; a value is
/// quoted when empty or holding a space, `=`, `"` or a control byte.
///
/// ```ignore
/// sluice::log_kv(Level::Info, "denied", &[("path", &req.path())]);
/// ```
pub fn log_kv(level: Level, msg: &str, fields: &[(&str, &str)]) {
    if !log_enabled(level) {
        return;
    }
    log(level, &logfmt(msg, fields));
}

/// The text [`log_kv`] logs.
pub fn logfmt(msg: &str, fields: &[(&str, &str)]) -> String {
    let mut out = String::from(msg);
    for (k, v) in fields {
        out.push(' ');
        push_logfmt(&mut out, k);
        out.push('=');
        push_logfmt(&mut out, v);
    }
    out
}

fn push_logfmt(out: &mut String, s: &str) {
    let quote = s.is_empty() || s.bytes().any(|c| c <= b' ' || c == b'=' || c == b'"' || c == 0x7f);
    if !quote {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Request or response header fields.
pub struct Headers {
    kind: u32,
}

impl Headers {
    /// Distinct field names, lower case.
    pub fn names(&self) -> Vec<String> {
        let mut buf = vec![0u8; 512];
        let mut cl = unsafe { abi::get_header_names(self.kind, buf.as_mut_ptr(), buf.len() as u32) };
        if cl as u32 as usize > buf.len() {
            buf = vec![0u8; cl as u32 as usize];
            cl = unsafe { abi::get_header_names(self.kind, buf.as_mut_ptr(), buf.len() as u32) };
        }
        split(&buf, cl)
    }
    /// Every value of `name`, in order.
    pub fn values(&self, name: &str) -> Vec<String> {
        let mut buf = vec![0u8; 256];
        let call = |buf: &mut Vec<u8>| unsafe {
            abi::get_header_values(self.kind, name.as_ptr(), name.len() as u32, buf.as_mut_ptr(), buf.len() as u32)
        };
        let mut cl = call(&mut buf);
        if cl as u32 as usize > buf.len() {
            buf = vec![0u8; cl as u32 as usize];
            cl = call(&mut buf);
        }
        split(&buf, cl)
    }
    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<String> {
        self.values(name).into_iter().next()
    }
    /// Replaces every value of `name`.
    pub fn set(&self, name: &str, value: &str) {
        unsafe { abi::set_header_value(self.kind, name.as_ptr(), name.len() as u32, value.as_ptr(), value.len() as u32) }
    }
    /// Appends a value to `name`.
    pub fn add(&self, name: &str, value: &str) {
        unsafe { abi::add_header_value(self.kind, name.as_ptr(), name.len() as u32, value.as_ptr(), value.len() as u32) }
    }
    /// Removes every value of `name`.
    pub fn remove(&self, name: &str) {
        unsafe { abi::remove_header(self.kind, name.as_ptr(), name.len() as u32) }
    }
}

/// A request or response body.
pub struct Body {
    kind: u32,
}

impl Body {
    /// Reads the rest of the body (the request body is consumed unless
    /// `BUFFER_REQUEST` is enabled).
    pub fn read_all(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut chunk = vec![0u8; 4096];
        loop {
            let r = unsafe { abi::read_body(self.kind, chunk.as_mut_ptr(), chunk.len() as u32) };
            out.extend_from_slice(&chunk[..r as u32 as usize]);
            if r >> 32 == 1 {
                return out;
            }
        }
    }
    /// Appends to the body; the first write replaces it.
    pub fn write(&self, data: &[u8]) {
        unsafe { abi::write_body(self.kind, data.as_ptr(), data.len() as u32) }
    }
}

/// The request being handled.
pub struct Request {
    ctx: std::cell::Cell<u32>,
}

impl Request {
    pub fn method(&self) -> String {
        get_string(abi::get_method)
    }
    pub fn set_method(&self, m: &str) {
        unsafe { abi::set_method(m.as_ptr(), m.len() as u32) }
    }
    /// Path and query as sent: `/a/b?x=1`.
    pub fn uri(&self) -> String {
        get_string(abi::get_uri)
    }
    pub fn set_uri(&self, u: &str) {
        unsafe { abi::set_uri(u.as_ptr(), u.len() as u32) }
    }
    /// The URI up to `?`, still percent-encoded.
    pub fn path(&self) -> String {
        let mut u = self.uri();
        if let Some(i) = u.find('?') {
            u.truncate(i);
        }
        u
    }
    /// The URI after the first `?`, still percent-encoded (`""` when
    /// there is none).
    pub fn raw_query(&self) -> String {
        let mut u = self.uri();
        match u.find('?') {
            Some(i) => u.split_off(i + 1),
            None => String::new(),
        }
    }
    /// The first value of query parameter `name`, decoded (`+` and `%XX`;
    /// a malformed escape such as `%zz` is kept as it is), or `None` when
    /// the parameter is absent. See [`query::value`].
    pub fn query(&self, name: &str) -> Option<String> {
        query::value(&self.raw_query(), name)
    }
    pub fn protocol(&self) -> String {
        get_string(abi::get_protocol_version)
    }
    pub fn source_addr(&self) -> String {
        get_string(abi::get_source_addr)
    }
    pub fn headers(&self) -> Headers {
        Headers { kind: 0 }
    }
    pub fn body(&self) -> Body {
        Body { kind: 0 }
    }
    /// The request context handed to `handle_response` (0 unless set).
    pub fn ctx(&self) -> u32 {
        self.ctx.get()
    }
    /// Sets the request context: the key of any state kept for this
    /// request until `handle_response`.
    pub fn set_ctx(&self, ctx: u32) {
        self.ctx.set(ctx)
    }
}

/// The response: the filter's own answer, or the next handler's.
pub struct Response {
    _private: (),
}

impl Response {
    pub fn status(&self) -> u32 {
        unsafe { abi::get_status_code() }
    }
    pub fn set_status(&self, code: u32) {
        unsafe { abi::set_status_code(code) }
    }
    pub fn headers(&self) -> Headers {
        Headers { kind: 1 }
    }
    pub fn body(&self) -> Body {
        Body { kind: 1 }
    }
    /// Answers the request: status, Content-Type (unless empty) and body.
    /// Return `false` from `handle_request` after it.
    pub fn respond(&self, status: u32, content_type: &str, body: &[u8]) {
        self.set_status(status);
        if !content_type.is_empty() {
            self.headers().set("Content-Type", content_type);
        }
        self.body().write(body);
    }
}

/// A filter. Its value is made once per instance by the function given to
/// [`register!`].
pub trait Filter {
    /// Handles a request: return `true` to run the next handler, `false`
    /// when the filter answered through `resp`.
    fn handle_request(&self, req: &Request, resp: &Response) -> bool;
    /// Runs after the next handler for continued requests. `req.ctx()` is
    /// what `set_ctx` set. Changing the response needs `BUFFER_RESPONSE`.
    fn handle_response(&self, _req: &Request, _resp: &Response, _is_error: bool) {}
}

#[doc(hidden)]
pub mod rt {
    use super::*;

    static mut FILTER: Option<Box<dyn Filter>> = None;

    extern "C" {
        fn __wasm_call_ctors();
    }

    pub fn initialize<F: Filter + 'static>(setup: fn() -> Result<F, String>) {
        unsafe { __wasm_call_ctors() };
        std::panic::set_hook(Box::new(panic_hook));
        match setup() {
            Ok(f) => unsafe { FILTER = Some(Box::new(f)) },
            Err(e) => {
                log(Level::Error, &format!("filter setup: {}", e));
                trap();
            }
        }
    }

    /// Logs a panic's message and location at error level, in place of
    /// the standard hook's text on stderr (whose advice to set
    /// RUST_BACKTRACE a filter cannot follow). The panic then aborts: a
    /// trap, whose stack names the functions when the module kept its
    /// name section (a debug build, see README.md).
    fn panic_hook(info: &std::panic::PanicInfo<'_>) {
        let p = info.payload();
        let msg = match (p.downcast_ref::<&str>(), p.downcast_ref::<String>()) {
            (Some(s), _) => s,
            (_, Some(s)) => s.as_str(),
            _ => "Box<dyn Any>",
        };
        let at = match info.location() {
            Some(l) => format!("{}:{}:{}", l.file(), l.line(), l.column()),
            None => String::from("unknown location"),
        };
        log(Level::Error, &format!("panic: {} (at {})", msg, at));
    }

    /// Traps: the host fails the call (or the instance's setup).
    #[cfg(target_arch = "wasm32")]
    #[inline(always)]
    fn trap() -> ! {
        core::arch::wasm32::unreachable()
    }

    // Off wasm32 (`cargo test` of the SDK's pure parts) nothing calls it.
    #[cfg(not(target_arch = "wasm32"))]
    fn trap() -> ! {
        std::process::abort()
    }

    fn filter() -> &'static dyn Filter {
        match unsafe { FILTER.as_deref() } {
            Some(f) => f,
            None => trap(),
        }
    }

    pub fn handle_request() -> u64 {
        let req = Request { ctx: std::cell::Cell::new(0) };
        if filter().handle_request(&req, &Response { _private: () }) {
            (req.ctx() as u64) << 32 | 1
        } else {
            0
        }
    }

    pub fn handle_response(ctx: u32, is_error: u32) {
        let req = Request { ctx: std::cell::Cell::new(ctx) };
        filter().handle_response(&req, &Response { _private: () }, is_error != 0)
    }
}

/// Exports the ABI's entry points for a filter made by `setup`, a
/// `fn() -> Result<F, String>` run once per instance (in `_initialize`):
/// an `Err` fails the instance, so the filter fails to load with that
/// message.
#[macro_export]
macro_rules! register {
    ($setup:expr) => {
        #[export_name = "_initialize"]
        pub extern "C" fn __sluice_initialize() {
            $crate::rt::initialize($setup)
        }
        #[export_name = "handle_request"]
        pub extern "C" fn __sluice_handle_request() -> u64 {
            $crate::rt::handle_request()
        }
        #[export_name = "handle_response"]
        pub extern "C" fn __sluice_handle_response(ctx: u32, is_error: u32) {
            $crate::rt::handle_response(ctx, is_error)
        }
    };
}

#[cfg(test)]
mod tests {
    // The same cases as sdk/go/sluicetest's TestLogKV.
    #[test]
    fn logfmt() {
        for (agent, want) in [
            ("curl/8", r#"seen path=/a agent=curl/8 odd="""#),
            ("", r#"seen path=/a agent="" odd="""#),
            (r#"x "y" =z\"#, r#"seen path=/a agent="x \"y\" =z\\" odd="""#),
            ("tab\there", r#"seen path=/a agent="tab\x09here" odd="""#),
        ] {
            assert_eq!(super::logfmt("seen", &[("path", "/a"), ("agent", agent), ("odd", "")]), want);
        }
    }
}
