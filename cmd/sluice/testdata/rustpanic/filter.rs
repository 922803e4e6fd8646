//! A Rust filter that panics on /panic, built with names (the SDK
//! README's debug build): `sluice filter run` must show the panic's
//! message and location, and the trap's stack must name its functions.

use sluice::{Filter, Request, Response};

struct Panics;

#[inline(never)]
fn check_token(path: &str) -> usize {
    let token: Option<usize> = if path == "/panic" { None } else { Some(1) };
    token.expect("no token configured")
}

impl Filter for Panics {
    fn handle_request(&self, req: &Request, _resp: &Response) -> bool {
        check_token(&req.path()) > 0
    }
}

sluice::register!(|| -> Result<Panics, String> { Ok(Panics) });
