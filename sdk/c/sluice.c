/* sluice.c: the http_handler ABI under sluice.h. See sluice.h. */
#include "sluice.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("http_handler"), import_name(#name)))

IMPORT(enable_features) uint32_t hh_enable_features(uint32_t features);
IMPORT(get_config) uint32_t hh_get_config(char *buf, uint32_t limit);
IMPORT(log_enabled) uint32_t hh_log_enabled(int32_t level);
IMPORT(log) void hh_log(int32_t level, const char *msg, uint32_t len);
IMPORT(get_method) uint32_t hh_get_method(char *buf, uint32_t limit);
IMPORT(set_method) void hh_set_method(const char *p, uint32_t len);
IMPORT(get_uri) uint32_t hh_get_uri(char *buf, uint32_t limit);
IMPORT(set_uri) void hh_set_uri(const char *p, uint32_t len);
IMPORT(get_protocol_version) uint32_t hh_get_protocol_version(char *buf, uint32_t limit);
IMPORT(get_source_addr) uint32_t hh_get_source_addr(char *buf, uint32_t limit);
IMPORT(get_header_names) uint64_t hh_get_header_names(uint32_t kind, char *buf, uint32_t limit);
IMPORT(get_header_values)
uint64_t hh_get_header_values(uint32_t kind, const char *name, uint32_t name_len, char *buf, uint32_t limit);
IMPORT(set_header_value)
void hh_set_header_value(uint32_t kind, const char *name, uint32_t name_len, const char *value, uint32_t value_len);
IMPORT(add_header_value)
void hh_add_header_value(uint32_t kind, const char *name, uint32_t name_len, const char *value, uint32_t value_len);
IMPORT(remove_header) void hh_remove_header(uint32_t kind, const char *name, uint32_t name_len);
IMPORT(read_body) uint64_t hh_read_body(uint32_t kind, char *buf, uint32_t limit);
IMPORT(write_body) void hh_write_body(uint32_t kind, const char *body, uint32_t len);
IMPORT(get_status_code) uint32_t hh_get_status_code(void);
IMPORT(set_status_code) void hh_set_status_code(uint32_t code);

/* ---- arena: memory for the current guest call ---- */

typedef struct block {
  struct block *next;
} block;
static block *arena;

void *sluice_alloc(size_t n) {
  block *b = malloc(sizeof(block) + n + 1);
  if (!b) __builtin_trap();
  b->next = arena;
  arena = b;
  return (char *)(b + 1);
}

static void arena_reset(void) {
  while (arena) {
    block *b = arena;
    arena = b->next;
    free(b);
  }
}

/* ---- strings ---- */

sluice_str sluice_cstr(const char *s) { return (sluice_str){s, s ? strlen(s) : 0}; }

bool sluice_str_eq(sluice_str a, sluice_str b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

bool sluice_str_eq_fold(sluice_str a, sluice_str b) {
  if (a.len != b.len) return false;
  for (size_t i = 0; i < a.len; i++)
    if (lower(a.ptr[i]) != lower(b.ptr[i])) return false;
  return true;
}

bool sluice_str_has_prefix(sluice_str s, sluice_str p) {
  return s.len >= p.len && (p.len == 0 || memcmp(s.ptr, p.ptr, p.len) == 0);
}

sluice_str sluice_str_dup(sluice_str s) {
  char *p = malloc(s.len + 1);
  if (!p) __builtin_trap();
  if (s.len) memcpy(p, s.ptr, s.len);
  p[s.len] = 0;
  return (sluice_str){p, s.len};
}

/* get calls a buf/buf_limit function, retrying once with the length it
 * asked for. */
typedef uint32_t (*getter)(char *buf, uint32_t limit);
static sluice_str get(getter fn) {
  uint32_t cap = 256;
  char *buf = sluice_alloc(cap);
  uint32_t n = fn(buf, cap);
  if (n > cap) {
    buf = sluice_alloc(n);
    n = fn(buf, n);
  }
  buf[n] = 0;
  return (sluice_str){buf, n};
}

static sluice_strs split(const char *buf, uint64_t count_len) {
  uint32_t count = (uint32_t)(count_len >> 32), n = (uint32_t)count_len;
  sluice_strs out = {sluice_alloc(sizeof(sluice_str) * (count ? count : 1)), 0};
  const char *p = buf, *end = buf + n;
  while (p < end && out.len < count) {
    const char *z = memchr(p, 0, (size_t)(end - p));
    if (!z) z = end;
    out.items[out.len++] = (sluice_str){p, (size_t)(z - p)};
    p = z + 1;
  }
  return out;
}

/* ---- exports ---- */

static uint32_t req_ctx;

void sluice_set_req_ctx(uint32_t ctx) { req_ctx = ctx; }

__attribute__((weak)) const char *sluice_on_setup(void) { return NULL; }
__attribute__((weak)) void sluice_on_response(uint32_t ctx, bool is_error) {
  (void)ctx;
  (void)is_error;
}

/* Runs inside _initialize (crt1-reactor calls constructors there). */
__attribute__((constructor)) static void setup(void) {
  const char *err = sluice_on_setup();
  if (err) {
    static const char prefix[] = "filter setup: ";
    size_t n = strlen(err);
    char *msg = sluice_alloc(sizeof(prefix) + n);
    memcpy(msg, prefix, sizeof(prefix) - 1);
    memcpy(msg + sizeof(prefix) - 1, err, n);
    hh_log(SLUICE_LOG_ERROR, msg, (uint32_t)(sizeof(prefix) - 1 + n));
    __builtin_trap();
  }
  arena_reset();
}

__attribute__((export_name("handle_request"))) uint64_t handle_request(void) {
  req_ctx = 0;
  int next = sluice_on_request();
  arena_reset();
  if (next != SLUICE_CONTINUE) return 0;
  return (uint64_t)req_ctx << 32 | 1;
}

__attribute__((export_name("handle_response"))) void handle_response(uint32_t ctx, uint32_t is_error) {
  sluice_on_response(ctx, is_error != 0);
  arena_reset();
}

/* ---- host calls ---- */

uint32_t sluice_enable_features(uint32_t f) { return hh_enable_features(f); }

static sluice_str config;
sluice_str sluice_config(void) {
  if (!config.ptr) {
    uint32_t n = hh_get_config(NULL, 0);
    char *p = malloc(n + 1);
    if (!p) __builtin_trap();
    if (n) hh_get_config(p, n);
    p[n] = 0;
    config = (sluice_str){p, n};
  }
  return config;
}

bool sluice_log_enabled(int level) { return hh_log_enabled(level) == 1; }
void sluice_log(int level, sluice_str m) { hh_log(level, m.ptr, (uint32_t)m.len); }

/* logfmt_len is the length of s as logfmt_put writes it; *quote is
 * whether it needs quotes. */
static size_t logfmt_len(sluice_str s, bool *quote) {
  size_t n = 0;
  *quote = s.len == 0;
  for (size_t i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    if (c <= ' ' || c == '=' || c == '"' || c == 0x7f) *quote = true;
    n += (c == '"' || c == '\\' || c == '\n') ? 2 : (c < ' ' || c == 0x7f) ? 4 : 1;
  }
  return *quote ? n + 2 : s.len;
}

static char *logfmt_put(char *p, sluice_str s) {
  static const char hex[] = "0123456789abcdef";
  bool quote;
  logfmt_len(s, &quote);
  if (!quote) {
    memcpy(p, s.ptr, s.len);
    return p + s.len;
  }
  *p++ = '"';
  for (size_t i = 0; i < s.len; i++) {
    unsigned char c = (unsigned char)s.ptr[i];
    if (c == '"' || c == '\\') {
      *p++ = '\\';
      *p++ = (char)c;
    } else if (c == '\n') {
      *p++ = '\\';
      *p++ = 'n';
    } else if (c < ' ' || c == 0x7f) {
      *p++ = '\\';
      *p++ = 'x';
      *p++ = hex[c >> 4];
      *p++ = hex[c & 15];
    } else {
      *p++ = (char)c;
    }
  }
  *p++ = '"';
  return p;
}

#define KV_END ((size_t)-1)

void sluice_log_kv(int level, sluice_str msg, ...) {
  if (!sluice_log_enabled(level)) return;
  va_list ap;
  bool q;
  size_t n = msg.len;
  va_start(ap, msg);
  for (;;) {
    sluice_str k = va_arg(ap, sluice_str);
    if (k.len == KV_END) break;
    sluice_str v = va_arg(ap, sluice_str);
    bool last = v.len == KV_END; /* a key without a value: "" */
    if (last) v.len = 0;
    n += 2 + logfmt_len(k, &q) + logfmt_len(v, &q);
    if (last) break;
  }
  va_end(ap);
  char *buf = malloc(n + 1), *p = buf;
  if (!buf) return;
  memcpy(p, msg.ptr, msg.len);
  p += msg.len;
  va_start(ap, msg);
  for (;;) {
    sluice_str k = va_arg(ap, sluice_str);
    if (k.len == KV_END) break;
    sluice_str v = va_arg(ap, sluice_str);
    bool last = v.len == KV_END;
    if (last) v.len = 0;
    *p++ = ' ';
    p = logfmt_put(p, k);
    *p++ = '=';
    p = logfmt_put(p, v);
    if (last) break;
  }
  va_end(ap);
  hh_log(level, buf, (uint32_t)(p - buf));
  free(buf);
}

sluice_str sluice_method(void) { return get(hh_get_method); }
void sluice_set_method(sluice_str m) { hh_set_method(m.ptr, (uint32_t)m.len); }
sluice_str sluice_uri(void) { return get(hh_get_uri); }
void sluice_set_uri(sluice_str u) { hh_set_uri(u.ptr, (uint32_t)u.len); }
sluice_str sluice_protocol(void) { return get(hh_get_protocol_version); }
sluice_str sluice_source_addr(void) { return get(hh_get_source_addr); }

sluice_str sluice_path(void) {
  sluice_str u = sluice_uri();
  const char *q = memchr(u.ptr, '?', u.len);
  if (q) u.len = (size_t)(q - u.ptr);
  return u;
}

sluice_str sluice_raw_query(void) {
  sluice_str u = sluice_uri();
  const char *q = memchr(u.ptr, '?', u.len);
  if (!q) return (sluice_str){u.ptr + u.len, 0};
  return (sluice_str){q + 1, u.len - (size_t)(q + 1 - u.ptr)};
}

static int unhex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* query_unescape decodes '+' and %XX into the arena. */
static sluice_str query_unescape(sluice_str s) {
  char *out = sluice_alloc(s.len);
  size_t n = 0;
  for (size_t i = 0; i < s.len; i++) {
    char c = s.ptr[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%' && i + 2 < s.len + 0 && unhex(s.ptr[i + 1]) >= 0 && unhex(s.ptr[i + 2]) >= 0) {
      c = (char)(unhex(s.ptr[i + 1]) << 4 | unhex(s.ptr[i + 2]));
      i += 2;
    }
    out[n++] = c;
  }
  out[n] = 0;
  return (sluice_str){out, n};
}

bool sluice_query(sluice_str name, sluice_str *value) {
  sluice_str u = sluice_uri();
  const char *q = memchr(u.ptr, '?', u.len);
  if (!q) return false;
  const char *p = q + 1, *end = u.ptr + u.len;
  while (p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    if (!amp) amp = end;
    const char *eq = memchr(p, '=', (size_t)(amp - p));
    sluice_str k = {p, (size_t)((eq ? eq : amp) - p)};
    if (sluice_str_eq(query_unescape(k), name)) {
      sluice_str v = eq ? (sluice_str){eq + 1, (size_t)(amp - eq - 1)} : (sluice_str){"", 0};
      if (value) *value = query_unescape(v);
      return true;
    }
    p = amp + 1;
  }
  return false;
}

sluice_strs sluice_header_names(uint32_t kind) {
  uint32_t cap = 512;
  char *buf = sluice_alloc(cap);
  uint64_t cl = hh_get_header_names(kind, buf, cap);
  if ((uint32_t)cl > cap) {
    cap = (uint32_t)cl;
    buf = sluice_alloc(cap);
    cl = hh_get_header_names(kind, buf, cap);
  }
  return split(buf, cl);
}

sluice_strs sluice_header_values(uint32_t kind, sluice_str name) {
  uint32_t cap = 256;
  char *buf = sluice_alloc(cap);
  uint64_t cl = hh_get_header_values(kind, name.ptr, (uint32_t)name.len, buf, cap);
  if ((uint32_t)cl > cap) {
    cap = (uint32_t)cl;
    buf = sluice_alloc(cap);
    cl = hh_get_header_values(kind, name.ptr, (uint32_t)name.len, buf, cap);
  }
  return split(buf, cl);
}

bool sluice_header_get(uint32_t kind, sluice_str name, sluice_str *value) {
  sluice_strs v = sluice_header_values(kind, name);
  if (v.len == 0) return false;
  if (value) *value = v.items[0];
  return true;
}

void sluice_header_set(uint32_t kind, sluice_str n, sluice_str v) {
  hh_set_header_value(kind, n.ptr, (uint32_t)n.len, v.ptr, (uint32_t)v.len);
}
void sluice_header_add(uint32_t kind, sluice_str n, sluice_str v) {
  hh_add_header_value(kind, n.ptr, (uint32_t)n.len, v.ptr, (uint32_t)v.len);
}
void sluice_header_remove(uint32_t kind, sluice_str n) { hh_remove_header(kind, n.ptr, (uint32_t)n.len); }

sluice_str sluice_body_read_all(uint32_t kind) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  if (!buf) __builtin_trap();
  for (;;) {
    if (n == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      if (!buf) __builtin_trap();
    }
    uint64_t r = hh_read_body(kind, buf + n, (uint32_t)(cap - n));
    n += (uint32_t)r;
    if (r >> 32) break;
  }
  char *out = sluice_alloc(n);
  memcpy(out, buf, n);
  out[n] = 0;
  free(buf);
  return (sluice_str){out, n};
}

void sluice_body_write(uint32_t kind, sluice_str d) { hh_write_body(kind, d.ptr, (uint32_t)d.len); }
int sluice_status(void) { return (int)hh_get_status_code(); }
void sluice_set_status(int code) { hh_set_status_code((uint32_t)code); }

void sluice_respond(int status, sluice_str content_type, sluice_str body) {
  hh_set_status_code((uint32_t)status);
  if (content_type.len) sluice_header_set(SLUICE_RESPONSE, sluice_s("Content-Type"), content_type);
  sluice_body_write(SLUICE_RESPONSE, body);
}

/* ---- JSON ---- */

static const char *ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

/* skip returns the end of the value starting at p, or NULL. */
static const char *skip(const char *p, const char *end) {
  p = ws(p, end);
  if (p >= end) return NULL;
  switch (*p) {
  case '"':
    for (p++; p < end; p++) {
      if (*p == '\\') p++;
      else if (*p == '"') return p + 1;
    }
    return NULL;
  case '{':
  case '[': {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = skip(p, end);
        if (!p) return NULL;
        p = ws(p, end);
        if (p >= end || *p != ':') return NULL;
        p++;
      }
      p = skip(p, end);
      if (!p) return NULL;
      p = ws(p, end);
      if (p >= end) return NULL;
      if (*p == close) return p + 1;
      if (*p != ',') return NULL;
      p++;
    }
  }
  default:
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t' &&
           *p != '\r')
      p++;
    return p;
  }
}

static sluice_str trim(sluice_str v) {
  const char *p = ws(v.ptr, v.ptr + v.len), *end = v.ptr + v.len;
  while (end > p && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\t' || end[-1] == '\r')) end--;
  return (sluice_str){p, (size_t)(end - p)};
}

sluice_json_type sluice_json_typeof(sluice_str v) {
  v = trim(v);
  if (v.len == 0) return SLUICE_JSON_INVALID;
  switch (v.ptr[0]) {
  case 'n': return SLUICE_JSON_NULL;
  case 't':
  case 'f': return SLUICE_JSON_BOOL;
  case '"': return SLUICE_JSON_STRING;
  case '[': return SLUICE_JSON_ARRAY;
  case '{': return SLUICE_JSON_OBJECT;
  }
  return (v.ptr[0] == '-' || (v.ptr[0] >= '0' && v.ptr[0] <= '9')) ? SLUICE_JSON_NUMBER : SLUICE_JSON_INVALID;
}

sluice_json_iter sluice_json_iterate(sluice_str c) {
  c = trim(c);
  sluice_json_iter it = {NULL, NULL, false};
  if (c.len >= 2 && (c.ptr[0] == '[' || c.ptr[0] == '{')) {
    it.p = c.ptr + 1;
    it.end = c.ptr + c.len - 1;
    it.object = c.ptr[0] == '{';
  }
  return it;
}

bool sluice_json_next(sluice_json_iter *it, sluice_str *key, sluice_str *value) {
  if (!it->p) return false;
  const char *p = ws(it->p, it->end);
  if (p < it->end && *p == ',') p = ws(p + 1, it->end);
  if (p >= it->end) return false;
  if (it->object) {
    const char *k = p;
    p = skip(p, it->end);
    if (!p) return false;
    if (key) *key = sluice_json_string((sluice_str){k, (size_t)(p - k)});
    p = ws(p, it->end);
    if (p >= it->end || *p != ':') return false;
    p = ws(p + 1, it->end);
  }
  const char *v = p;
  p = skip(p, it->end);
  if (!p) return false;
  if (value) *value = (sluice_str){v, (size_t)(p - v)};
  it->p = p;
  return true;
}

static bool key_eq(sluice_str raw, const char *key) {
  sluice_str k = sluice_json_string(raw);
  bool eq = k.ptr && strcmp(k.ptr, key) == 0;
  free((void *)k.ptr);
  return eq;
}

bool sluice_json_get(sluice_str obj, const char *key, sluice_str *value) {
  sluice_json_iter it = sluice_json_iterate(obj);
  if (!it.object) return false;
  const char *p = ws(it.p, it.end);
  while (p < it.end) {
    if (*p == ',') p = ws(p + 1, it.end);
    const char *k = p;
    p = skip(p, it.end);
    if (!p) return false;
    sluice_str raw = {k, (size_t)(p - k)};
    p = ws(p, it.end);
    if (p >= it.end || *p != ':') return false;
    const char *v = ws(p + 1, it.end);
    p = skip(v, it.end);
    if (!p) return false;
    if (key_eq(raw, key)) {
      if (value) *value = (sluice_str){v, (size_t)(p - v)};
      return true;
    }
    p = ws(p, it.end);
  }
  return false;
}

static size_t utf8(char *out, uint32_t c) {
  if (c < 0x80) { out[0] = (char)c; return 1; }
  if (c < 0x800) { out[0] = (char)(0xC0 | c >> 6); out[1] = (char)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    out[0] = (char)(0xE0 | c >> 12); out[1] = (char)(0x80 | (c >> 6 & 0x3F)); out[2] = (char)(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | c >> 18); out[1] = (char)(0x80 | (c >> 12 & 0x3F));
  out[2] = (char)(0x80 | (c >> 6 & 0x3F)); out[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

static int hex4(const char *p, const char *end) {
  if (end - p < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int d = unhex(p[i]);
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

sluice_str sluice_json_string(sluice_str v) {
  v = trim(v);
  if (v.len < 2 || v.ptr[0] != '"' || v.ptr[v.len - 1] != '"') return (sluice_str){NULL, 0};
  const char *p = v.ptr + 1, *end = v.ptr + v.len - 1;
  char *out = malloc(v.len + 4);
  if (!out) __builtin_trap();
  size_t n = 0;
  while (p < end) {
    char c = *p++;
    if (c != '\\' || p >= end) { out[n++] = c; continue; }
    c = *p++;
    switch (c) {
    case 'b': out[n++] = '\b'; break;
    case 'f': out[n++] = '\f'; break;
    case 'n': out[n++] = '\n'; break;
    case 'r': out[n++] = '\r'; break;
    case 't': out[n++] = '\t'; break;
    case 'u': {
      int u = hex4(p, end);
      if (u < 0) { out[n++] = '?'; break; }
      p += 4;
      uint32_t cp = (uint32_t)u;
      if (cp >= 0xD800 && cp < 0xDC00 && end - p >= 6 && p[0] == '\\' && p[1] == 'u') {
        int lo = hex4(p + 2, end);
        if (lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
          p += 6;
        }
      }
      n += utf8(out + n, cp);
      break;
    }
    default: out[n++] = c; /* \" \\ \/ */
    }
  }
  out[n] = 0;
  return (sluice_str){out, n};
}

bool sluice_json_bool(sluice_str v, bool dflt) {
  v = trim(v);
  if (sluice_str_eq(v, sluice_s("true"))) return true;
  if (sluice_str_eq(v, sluice_s("false"))) return false;
  return dflt;
}

long long sluice_json_int(sluice_str v, long long dflt) {
  v = trim(v);
  if (sluice_json_typeof(v) != SLUICE_JSON_NUMBER) return dflt;
  long long n = 0;
  size_t i = v.ptr[0] == '-' ? 1 : 0;
  for (; i < v.len && v.ptr[i] >= '0' && v.ptr[i] <= '9'; i++) n = n * 10 + (v.ptr[i] - '0');
  return v.ptr[0] == '-' ? -n : n;
}
