/* keyauth: admits requests that carry one of the configured API keys, in a
 * header or a query parameter, and tells the upstream which consumer the
 * key belongs to. Keys are compared in constant time. */
#include "sluice.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  sluice_str consumer; /* empty for keys given as a list */
  sluice_str key;
} entry;

static entry *keys;
static size_t nkeys;
static sluice_str header = sluice_s("X-API-Key");
static sluice_str query;
static sluice_str consumer_header = sluice_s("X-Consumer");
static bool hide_credentials;
static sluice_str missing_body, invalid_body;

static bool opt_string(sluice_str cfg, const char *name, sluice_str *out) {
  sluice_str v;
  if (!sluice_json_get(cfg, name, &v)) return true;
  if (sluice_json_typeof(v) != SLUICE_JSON_STRING) return false;
  *out = sluice_json_string(v);
  return true;
}

static bool add_key(sluice_str consumer, sluice_str v) {
  if (sluice_json_typeof(v) != SLUICE_JSON_STRING) return false;
  sluice_str k = sluice_json_string(v);
  if (k.len == 0) return false;
  keys = realloc(keys, sizeof(entry) * (nkeys + 1));
  keys[nkeys++] = (entry){consumer, k};
  return true;
}

/* body builds a one-line message (malloc'd). */
static sluice_str body(const char *a, sluice_str b, const char *c, sluice_str d, const char *e) {
  size_t n = strlen(a) + b.len + strlen(c) + d.len + strlen(e);
  char *p = malloc(n + 1), *q = p;
  memcpy(q, a, strlen(a)); q += strlen(a);
  memcpy(q, b.ptr, b.len); q += b.len;
  memcpy(q, c, strlen(c)); q += strlen(c);
  memcpy(q, d.ptr, d.len); q += d.len;
  memcpy(q, e, strlen(e)); q += strlen(e);
  *q = 0;
  return (sluice_str){p, n};
}

const char *sluice_on_setup(void) {
  sluice_str cfg = sluice_config(), v;
  if (sluice_json_typeof(cfg) != SLUICE_JSON_OBJECT) return "config must be an object";
  if (!opt_string(cfg, "header", &header)) return "header must be a string";
  if (!opt_string(cfg, "query", &query)) return "query must be a string";
  if (!opt_string(cfg, "consumer_header", &consumer_header)) return "consumer_header must be a string";
  if (sluice_json_get(cfg, "hide_credentials", &v)) {
    if (sluice_json_typeof(v) != SLUICE_JSON_BOOL) return "hide_credentials must be true or false";
    hide_credentials = sluice_json_bool(v, false);
  }
  if (header.len == 0 && query.len == 0) return "set header or query (or both): where clients send the key";
  if (!sluice_json_get(cfg, "keys", &v)) return "keys is required: a map of consumer name to key, or a list of keys";
  sluice_json_iter it = sluice_json_iterate(v);
  sluice_str k, item;
  switch (sluice_json_typeof(v)) {
  case SLUICE_JSON_OBJECT:
    while (sluice_json_next(&it, &k, &item))
      if (!add_key(k, item)) return "keys: each key must be a non-empty string";
    break;
  case SLUICE_JSON_ARRAY:
    while (sluice_json_next(&it, NULL, &item))
      if (!add_key((sluice_str){"", 0}, item)) return "keys: each key must be a non-empty string";
    break;
  default:
    return "keys must be a map of consumer name to key, or a list of keys";
  }
  if (nkeys == 0) return "keys is empty: no request could pass";
  sluice_str none = {"", 0};
  if (header.len && query.len) {
    missing_body = body("401 Unauthorized: no API key (send it in the ", header, " header or the ", query, " query parameter)\n");
  } else if (header.len) {
    missing_body = body("401 Unauthorized: no API key (send it in the ", header, " header)\n", none, "");
  } else {
    missing_body = body("401 Unauthorized: no API key (send it in the ", query, " query parameter)\n", none, "");
  }
  invalid_body = sluice_s("401 Unauthorized: invalid API key\n");
  return NULL;
}

/* equal compares in time that depends only on the lengths. */
static bool equal(sluice_str a, sluice_str b) {
  unsigned char diff = a.len != b.len;
  size_t n = a.len > b.len ? a.len : b.len;
  for (size_t i = 0; i < n; i++) {
    unsigned char x = i < a.len ? (unsigned char)a.ptr[i] : 0;
    unsigned char y = i < b.len ? (unsigned char)b.ptr[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

static int reject(sluice_str msg) {
  sluice_header_set(SLUICE_RESPONSE, sluice_s("WWW-Authenticate"), sluice_s("ApiKey"));
  sluice_respond(401, sluice_s("text/plain; charset=utf-8"), msg);
  return SLUICE_STOP;
}

/* without_param returns uri without the query parameter name. */
static sluice_str without_param(sluice_str uri, sluice_str name) {
  const char *q = memchr(uri.ptr, '?', uri.len);
  if (!q) return uri;
  char *out = sluice_alloc(uri.len);
  size_t n = (size_t)(q - uri.ptr);
  memcpy(out, uri.ptr, n);
  const char *p = q + 1, *end = uri.ptr + uri.len;
  bool first = true;
  while (p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    if (!amp) amp = end;
    const char *eq = memchr(p, '=', (size_t)(amp - p));
    sluice_str k = {p, (size_t)((eq ? eq : amp) - p)};
    if (!sluice_str_eq(k, name)) {
      out[n++] = first ? '?' : '&';
      first = false;
      memcpy(out + n, p, (size_t)(amp - p));
      n += (size_t)(amp - p);
    }
    p = amp + 1;
  }
  return (sluice_str){out, n};
}

int sluice_on_request(void) {
  sluice_str got = {0};
  bool found = false, from_query = false;
  if (header.len) found = sluice_header_get(SLUICE_REQUEST, header, &got);
  if (!found && query.len) found = from_query = sluice_query(query, &got);
  if (!found || got.len == 0) return reject(missing_body);

  const entry *match = NULL;
  for (size_t i = 0; i < nkeys; i++) /* no early exit: every key is compared */
    if (equal(got, keys[i].key) && !match) match = &keys[i];
  if (!match) return reject(invalid_body);

  if (consumer_header.len) {
    /* Never let a client choose its own consumer name. */
    if (match->consumer.len) sluice_header_set(SLUICE_REQUEST, consumer_header, match->consumer);
    else sluice_header_remove(SLUICE_REQUEST, consumer_header);
  }
  if (hide_credentials) {
    if (from_query) sluice_set_uri(without_param(sluice_uri(), query));
    else sluice_header_remove(SLUICE_REQUEST, header);
  }
  return SLUICE_CONTINUE;
}
