//! The custom-filter example in Rust: adds a header from its config to
//! every request, tags every response it lets through, and answers 403 to
//! paths under a prefix (and logs it).

use sluice::{json, Filter, Level, Request, Response};

struct Example {
    header: String,
    value: String,
    deny_prefix: String,
}

impl Filter for Example {
    fn handle_request(&self, req: &Request, resp: &Response) -> bool {
        if !self.deny_prefix.is_empty() && req.path().starts_with(&self.deny_prefix) {
            resp.respond(403, "text/plain; charset=utf-8", b"forbidden\n");
            let agent = req.headers().get("User-Agent").unwrap_or_default();
            sluice::log_kv(Level::Info, "denied", &[("path", &req.path()), ("agent", &agent)]);
            return false;
        }
        req.headers().set(&self.header, &self.value);
        // ?debug=… reaches the upstream decoded, as X-Debug; a malformed
        // escape (?debug=%zz) is no error.
        if let Some(debug) = req.query("debug") {
            req.headers().set("X-Debug", &debug);
        }
        // Set before continuing: the client gets it with the upstream's
        // response (sdk/ABI.md, "Response headers set before the next handler").
        resp.headers().set("X-Filtered-By", "custom-filter");
        true
    }
}

fn setup() -> Result<Example, String> {
    let cfg = json::parse(&sluice::config())?;
    let text = |key: &str, default: &str| cfg.get(key).and_then(|v| v.as_str()).unwrap_or_else(|| default.to_string());
    let header = text("header", "X-Example");
    if header.is_empty() {
        return Err("header must be a non-empty string".into());
    }
    Ok(Example { header, value: text("value", ""), deny_prefix: text("deny_prefix", "") })
}

sluice::register!(setup);
