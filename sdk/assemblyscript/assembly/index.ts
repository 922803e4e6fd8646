// Write sluice filters in AssemblyScript: WebAssembly guests of the
// http-wasm http_handler ABI (see sdk/ABI.md).
//
// A filter registers its handler at top level (that code runs once per
// instance, in _initialize) and re-exports the ABI's entry points:
//
//   import { handle, Request, Response } from "@sluicehq/sluice-assemblyscript";
//   export { handle_request, handle_response } from "@sluicehq/sluice-assemblyscript";
//   handle((req: Request, resp: Response): bool => { ...; return true; });
//
// Build with: asc filter.ts -o filter.wasm --optimize --exportStart _initialize --use abort=
//
// Instances are pooled: globals persist across requests, and an instance
// may serve other requests while one waits on its upstream. Keep
// per-request state keyed by Request.ctx.

// ---- the http_handler imports ----

@external("http_handler", "enable_features") declare function hh_enable_features(f: u32): u32;
@external("http_handler", "get_config") declare function hh_get_config(buf: usize, limit: u32): u32;
@external("http_handler", "log_enabled") declare function hh_log_enabled(level: i32): u32;
@external("http_handler", "log") declare function hh_log(level: i32, msg: usize, len: u32): void;
@external("http_handler", "get_method") declare function hh_get_method(buf: usize, limit: u32): u32;
@external("http_handler", "set_method") declare function hh_set_method(p: usize, len: u32): void;
@external("http_handler", "get_uri") declare function hh_get_uri(buf: usize, limit: u32): u32;
@external("http_handler", "set_uri") declare function hh_set_uri(p: usize, len: u32): void;
@external("http_handler", "get_protocol_version") declare function hh_get_protocol_version(buf: usize, limit: u32): u32;
@external("http_handler", "get_source_addr") declare function hh_get_source_addr(buf: usize, limit: u32): u32;
@external("http_handler", "get_header_names") declare function hh_get_header_names(kind: u32, buf: usize, limit: u32): u64;
@external("http_handler", "get_header_values") declare function hh_get_header_values(kind: u32, name: usize, nameLen: u32, buf: usize, limit: u32): u64;
@external("http_handler", "set_header_value") declare function hh_set_header_value(kind: u32, name: usize, nameLen: u32, value: usize, valueLen: u32): void;
@external("http_handler", "add_header_value") declare function hh_add_header_value(kind: u32, name: usize, nameLen: u32, value: usize, valueLen: u32): void;
@external("http_handler", "remove_header") declare function hh_remove_header(kind: u32, name: usize, nameLen: u32): void;
@external("http_handler", "read_body") declare function hh_read_body(kind: u32, buf: usize, limit: u32): u64;
@external("http_handler", "write_body") declare function hh_write_body(kind: u32, body: usize, len: u32): void;
@external("http_handler", "get_status_code") declare function hh_get_status_code(): u32;
@external("http_handler", "set_status_code") declare function hh_set_status_code(code: u32): void;

// ---- features, config, logging ----

export const BUFFER_REQUEST: u32 = 1;
export const BUFFER_RESPONSE: u32 = 2;
export const TRAILERS: u32 = 4;

/** Asks for features; returns those enabled. At top level: every request. */
export function enableFeatures(features: u32): u32 {
  return hh_enable_features(features);
}

export const LOG_DEBUG: i32 = -1;
export const LOG_INFO: i32 = 0;
export const LOG_WARN: i32 = 1;
export const LOG_ERROR: i32 = 2;

export function logEnabled(level: i32): bool {
  return hh_log_enabled(level) == 1;
}

/** Logs msg to the server's log, tagged with the filter's name. */
export function log(level: i32, msg: string): void {
  const b = String.UTF8.encode(msg);
  hh_log(level, changetype<usize>(b), <u32>b.byteLength);
}

/**
 * Logs msg with key/value fields when level is enabled: kv is key, value,
 * key, value… (a key without a value gets ""). The fields follow the
 * message in logfmt, the same in every SDK (see sdk/README.md):
 * `denied path=/admin/x reason="no token"`; a value is quoted when empty
 * or holding a space, '=', '"' or a control character.
 *
 *   logKV(LOG_INFO, "denied", ["path", req.path()]);
 */
export function logKV(level: i32, msg: string, kv: string[]): void {
  if (!logEnabled(level)) return;
  log(level, logfmt(msg, kv));
}

/** The text logKV logs. */
export function logfmt(msg: string, kv: string[]): string {
  let out = msg;
  for (let i = 0; i < kv.length; i += 2) {
    out += " " + logfmtQuote(kv[i]) + "=" + logfmtQuote(i + 1 < kv.length ? kv[i + 1] : "");
  }
  return out;
}

function logfmtQuote(s: string): string {
  let quote = s.length == 0;
  for (let i = 0; i < s.length && !quote; i++) {
    const c = s.charCodeAt(i);
    quote = c <= 0x20 || c == 0x3d || c == 0x22 || c == 0x7f;
  }
  if (!quote) return s;
  let out = "\"";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 0x22 || c == 0x5c) out += "\\" + String.fromCharCode(c);
    else if (c == 0x0a) out += "\\n";
    else if (c < 0x20 || c == 0x7f) out += "\\x" + (c < 16 ? "0" : "") + c.toString(16);
    else out += String.fromCharCode(c);
  }
  return out + "\"";
}

/** Fails instance setup: the filter fails to load with msg. */
export function setupFailed(msg: string): void {
  log(LOG_ERROR, "filter setup: " + msg);
  unreachable();
}

let scratch = new ArrayBuffer(512);

type Getter = (buf: usize, limit: u32) => u32;

function getString(fn: Getter): string {
  let n = fn(changetype<usize>(scratch), <u32>scratch.byteLength);
  if (n > <u32>scratch.byteLength) {
    scratch = new ArrayBuffer(<i32>n);
    n = fn(changetype<usize>(scratch), n);
  }
  return String.UTF8.decodeUnsafe(changetype<usize>(scratch), <usize>n);
}

function splitList(cl: u64): string[] {
  const count = <i32>(cl >> 32);
  const n = <i32>(<u32>cl);
  const out = new Array<string>(0);
  const base = changetype<usize>(scratch);
  let start = 0;
  for (let i = 0; i < n && out.length < count; i++) {
    if (load<u8>(base + <usize>i) == 0) {
      out.push(String.UTF8.decodeUnsafe(base + <usize>start, <usize>(i - start)));
      start = i + 1;
    }
  }
  return out;
}

/** The filter's config: the HCL `config` value as JSON ("{}" when absent). */
export function config(): string {
  return getString((b: usize, l: u32): u32 => hh_get_config(b, l));
}

// ---- request and response ----

export class Headers {
  constructor(private kind: u32) {}

  /** Distinct field names, lower case. */
  names(): string[] {
    let cl = hh_get_header_names(this.kind, changetype<usize>(scratch), <u32>scratch.byteLength);
    if (<u32>cl > <u32>scratch.byteLength) {
      scratch = new ArrayBuffer(<i32>(<u32>cl));
      cl = hh_get_header_names(this.kind, changetype<usize>(scratch), <u32>scratch.byteLength);
    }
    return splitList(cl);
  }

  /** Every value of name, in order. */
  values(name: string): string[] {
    const nb = String.UTF8.encode(name);
    let cl = hh_get_header_values(this.kind, changetype<usize>(nb), <u32>nb.byteLength, changetype<usize>(scratch), <u32>scratch.byteLength);
    if (<u32>cl > <u32>scratch.byteLength) {
      scratch = new ArrayBuffer(<i32>(<u32>cl));
      cl = hh_get_header_values(this.kind, changetype<usize>(nb), <u32>nb.byteLength, changetype<usize>(scratch), <u32>scratch.byteLength);
    }
    return splitList(cl);
  }

  /** The first value of name, or null. */
  get(name: string): string | null {
    const v = this.values(name);
    return v.length > 0 ? v[0] : null;
  }

  /** Replaces every value of name. */
  set(name: string, value: string): void {
    const n = String.UTF8.encode(name), v = String.UTF8.encode(value);
    hh_set_header_value(this.kind, changetype<usize>(n), <u32>n.byteLength, changetype<usize>(v), <u32>v.byteLength);
  }

  /** Appends a value to name. */
  add(name: string, value: string): void {
    const n = String.UTF8.encode(name), v = String.UTF8.encode(value);
    hh_add_header_value(this.kind, changetype<usize>(n), <u32>n.byteLength, changetype<usize>(v), <u32>v.byteLength);
  }

  /** Removes every value of name. */
  remove(name: string): void {
    const n = String.UTF8.encode(name);
    hh_remove_header(this.kind, changetype<usize>(n), <u32>n.byteLength);
  }
}

export class Body {
  constructor(private kind: u32) {}

  /** Reads the rest of the body. */
  readAll(): Uint8Array {
    let out = new Uint8Array(0);
    const chunk = new Uint8Array(4096);
    while (true) {
      const r = hh_read_body(this.kind, chunk.dataStart, <u32>chunk.length);
      const n = <i32>(<u32>r);
      const next = new Uint8Array(out.length + n);
      next.set(out);
      next.set(chunk.subarray(0, n), out.length);
      out = next;
      if ((r >> 32) == 1) return out;
    }
  }

  readAllString(): string {
    const b = this.readAll();
    return String.UTF8.decodeUnsafe(b.dataStart, <usize>b.length);
  }

  /** Appends to the body; the first write replaces it. */
  write(data: Uint8Array): void {
    hh_write_body(this.kind, data.dataStart, <u32>data.length);
  }

  writeString(s: string): void {
    const b = String.UTF8.encode(s);
    hh_write_body(this.kind, changetype<usize>(b), <u32>b.byteLength);
  }
}

/** The request being handled. */
export class Request {
  /** The request context handed to the response hook: set it to key any
   * per-request state. 0 by default. */
  ctx: u32 = 0;
  readonly headers: Headers = new Headers(0);
  readonly body: Body = new Body(0);

  method(): string {
    return getString((b: usize, l: u32): u32 => hh_get_method(b, l));
  }
  setMethod(m: string): void {
    const b = String.UTF8.encode(m);
    hh_set_method(changetype<usize>(b), <u32>b.byteLength);
  }
  /** Path and query as sent: "/a/b?x=1". */
  uri(): string {
    return getString((b: usize, l: u32): u32 => hh_get_uri(b, l));
  }
  setURI(u: string): void {
    const b = String.UTF8.encode(u);
    hh_set_uri(changetype<usize>(b), <u32>b.byteLength);
  }
  /** The URI up to '?', still percent-encoded. */
  path(): string {
    const u = this.uri();
    const i = u.indexOf("?");
    return i < 0 ? u : u.substring(0, i);
  }
  /** The URI after the first '?', still percent-encoded ("" when none). */
  rawQuery(): string {
    const u = this.uri();
    const i = u.indexOf("?");
    return i < 0 ? "" : u.substring(i + 1);
  }
  /** The first value of query parameter name, decoded ("+" and %XX; a
   * malformed escape such as %zz is kept as it is), or null when the
   * parameter is absent. See queryValue. */
  query(name: string): string | null {
    return queryValue(this.rawQuery(), name);
  }
  protocol(): string {
    return getString((b: usize, l: u32): u32 => hh_get_protocol_version(b, l));
  }
  sourceAddr(): string {
    return getString((b: usize, l: u32): u32 => hh_get_source_addr(b, l));
  }
}

/** The response: the filter's own answer, or the next handler's. */
export class Response {
  readonly headers: Headers = new Headers(1);
  readonly body: Body = new Body(1);

  status(): u32 {
    return hh_get_status_code();
  }
  setStatus(code: u32): void {
    hh_set_status_code(code);
  }
  /** Answers the request; return false from the handler after it. */
  respond(status: u32, contentType: string, body: string): void {
    this.setStatus(status);
    if (contentType.length > 0) this.headers.set("Content-Type", contentType);
    this.body.writeString(body);
  }
}

// ---- query parameters ----
//
// The rules of the C SDK's sluice_query (and, but for malformed escapes,
// the Go SDK's QueryValue): parameters are separated by "&"; a name is
// compared after decoding; the first match wins; a parameter without "="
// has the empty value. Unlike decodeURIComponent, which throws (an abort:
// a trap) on "%zz", decoding never fails: a "%" not followed by two hex
// digits is kept as it is.

function unhex(c: u8): i32 {
  if (c >= 48 && c <= 57) return <i32>c - 48;
  if (c >= 97 && c <= 102) return <i32>c - 87;
  if (c >= 65 && c <= 70) return <i32>c - 55;
  return -1;
}

/** Decodes a query component: "+" is a space, %XX a byte, and a "%"
 * without two hex digits after it stays literal. Never traps; decoded
 * bytes that are not UTF-8 are read as leniently as every host string. */
export function queryUnescape(s: string): string {
  if (s.indexOf("%") < 0 && s.indexOf("+") < 0) return s;
  const b = Uint8Array.wrap(String.UTF8.encode(s));
  const out = new Uint8Array(b.length);
  let n = 0;
  for (let i = 0; i < b.length; i++) {
    let c = b[i];
    if (c == 43) {
      c = 32; // '+'
    } else if (c == 37 && i + 2 < b.length) { // '%'
      const hi = unhex(b[i + 1]), lo = unhex(b[i + 2]);
      if (hi >= 0 && lo >= 0) {
        c = <u8>(hi << 4 | lo);
        i += 2;
      }
    }
    out[n++] = c;
  }
  return String.UTF8.decodeUnsafe(out.dataStart, <usize>n);
}

/** The first value of parameter name in a raw query ("a=1&b=x%20y",
 * without the "?"), decoded; null when it is absent. */
export function queryValue(rawQuery: string, name: string): string | null {
  let start = 0;
  while (start < rawQuery.length) {
    let end = rawQuery.indexOf("&", start);
    if (end < 0) end = rawQuery.length;
    const kv = rawQuery.substring(start, end);
    const eq = kv.indexOf("=");
    const k = eq < 0 ? kv : kv.substring(0, eq);
    if (k == name || queryUnescape(k) == name) {
      return eq < 0 ? "" : queryUnescape(kv.substring(eq + 1));
    }
    start = end + 1;
  }
  return null;
}

// ---- registration and the exports ----

let requestHandler: ((req: Request, resp: Response) => bool) | null = null;
let responseHandler: ((req: Request, resp: Response, isError: bool) => void) | null = null;

/** Registers the request handler: return true to run the next handler,
 * false when the filter answered through resp. */
export function handle(fn: (req: Request, resp: Response) => bool): void {
  requestHandler = fn;
}

/** Registers a hook run after the next handler for continued requests.
 * Changing the response there needs BUFFER_RESPONSE. */
export function handleResponse(fn: (req: Request, resp: Response, isError: bool) => void): void {
  responseHandler = fn;
}

export function handle_request(): u64 {
  const h = requestHandler;
  if (h == null) return 1;
  const req = new Request();
  if (!h(req, new Response())) return 0;
  return (<u64>req.ctx << 32) | 1;
}

export function handle_response(reqCtx: u32, isError: u32): void {
  const h = responseHandler;
  if (h == null) return;
  const req = new Request();
  req.ctx = reqCtx;
  h(req, new Response(), isError != 0);
}

// ---- JSON (for the config) ----

export const JSON_NULL: i32 = 0;
export const JSON_BOOL: i32 = 1;
export const JSON_NUMBER: i32 = 2;
export const JSON_STRING: i32 = 3;
export const JSON_ARRAY: i32 = 4;
export const JSON_OBJECT: i32 = 5;

/** A parsed JSON value. */
export class JSONValue {
  kind: i32 = JSON_NULL;
  str: string = "";
  num: f64 = 0;
  bool: bool = false;
  items: JSONValue[] = [];
  keys: string[] = [];

  /** The member key of an object, or null. */
  get(key: string): JSONValue | null {
    if (this.kind != JSON_OBJECT) return null;
    for (let i = 0; i < this.keys.length; i++) if (this.keys[i] == key) return this.items[i];
    return null;
  }

  /** The member key when it is a string, else dflt. */
  getString(key: string, dflt: string): string {
    const v = this.get(key);
    return v != null && v.kind == JSON_STRING ? v.str : dflt;
  }
}

class JSONParser {
  i: i32 = 0;
  error: string = "";
  constructor(public s: string) {}

  ws(): void {
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c != 32 && c != 9 && c != 10 && c != 13) break;
      this.i++;
    }
  }

  fail(msg: string): JSONValue {
    if (this.error.length == 0) this.error = "json: " + msg + " at " + this.i.toString();
    return new JSONValue();
  }

  value(): JSONValue {
    this.ws();
    if (this.i >= this.s.length) return this.fail("unexpected end");
    const c = this.s.charCodeAt(this.i);
    const v = new JSONValue();
    if (c == 34) {
      v.kind = JSON_STRING;
      v.str = this.string();
    } else if (c == 91 || c == 123) {
      const obj = c == 123;
      v.kind = obj ? JSON_OBJECT : JSON_ARRAY;
      const close = obj ? 125 : 93;
      this.i++;
      this.ws();
      if (this.i < this.s.length && this.s.charCodeAt(this.i) == close) {
        this.i++;
        return v;
      }
      while (this.error.length == 0) {
        if (obj) {
          this.ws();
          v.keys.push(this.string());
          this.ws();
          if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 58) return this.fail("expected :");
          this.i++;
        }
        v.items.push(this.value());
        this.ws();
        if (this.i >= this.s.length) return this.fail("unexpected end");
        const d = this.s.charCodeAt(this.i++);
        if (d == close) break;
        if (d != 44) return this.fail("expected , or a close");
      }
    } else if (this.s.startsWith("true", this.i)) {
      v.kind = JSON_BOOL;
      v.bool = true;
      this.i += 4;
    } else if (this.s.startsWith("false", this.i)) {
      v.kind = JSON_BOOL;
      this.i += 5;
    } else if (this.s.startsWith("null", this.i)) {
      this.i += 4;
    } else {
      const start = this.i;
      while (this.i < this.s.length) {
        const d = this.s.charCodeAt(this.i);
        if (!((d >= 48 && d <= 57) || d == 45 || d == 43 || d == 46 || d == 101 || d == 69)) break;
        this.i++;
      }
      if (start == this.i) return this.fail("unexpected character");
      v.kind = JSON_NUMBER;
      v.num = parseFloat(this.s.substring(start, this.i));
    }
    return v;
  }

  string(): string {
    if (this.i >= this.s.length || this.s.charCodeAt(this.i) != 34) {
      this.fail("expected string");
      return "";
    }
    this.i++;
    let out = "";
    let start = this.i;
    while (this.i < this.s.length) {
      const c = this.s.charCodeAt(this.i);
      if (c == 34) {
        out += this.s.substring(start, this.i);
        this.i++;
        return out;
      }
      if (c == 92) {
        out += this.s.substring(start, this.i);
        const e = this.s.charCodeAt(this.i + 1);
        this.i += 2;
        if (e == 110) out += "\n";
        else if (e == 116) out += "\t";
        else if (e == 114) out += "\r";
        else if (e == 98) out += "\b";
        else if (e == 102) out += "\f";
        else if (e == 117) {
          out += String.fromCharCode(<i32>I32.parseInt(this.s.substring(this.i, this.i + 4), 16));
          this.i += 4;
        } else out += String.fromCharCode(e);
        start = this.i;
        continue;
      }
      this.i++;
    }
    this.fail("unterminated string");
    return "";
  }
}

/** Parses a JSON document; on a syntax error, fails instance setup. */
export function parseJSON(s: string): JSONValue {
  const p = new JSONParser(s);
  const v = p.value();
  p.ws();
  if (p.error.length == 0 && p.i != s.length) p.fail("trailing data");
  if (p.error.length > 0) setupFailed(p.error);
  return v;
}
