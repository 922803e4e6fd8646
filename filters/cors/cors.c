/* cors: Cross-Origin Resource Sharing. Answers preflight requests itself
 * and adds the CORS response headers to actual requests from allowed
 * origins. */
#include "sluice.h"

#include <stdlib.h>
#include <string.h>

static sluice_str *origins;
static size_t norigins;
static bool any_origin;
static sluice_str methods = sluice_s("GET, HEAD, POST");
static sluice_str allow_headers; /* empty: echo Access-Control-Request-Headers */
static sluice_str expose_headers;
static bool credentials;
static sluice_str max_age;

/* join reads a list of strings into "a, b, c" (malloc'd). */
static const char *join(sluice_str cfg, const char *name, sluice_str *out, bool *star) {
  sluice_str v, item;
  if (!sluice_json_get(cfg, name, &v)) return NULL;
  if (sluice_json_typeof(v) != SLUICE_JSON_ARRAY) return "allowed_methods, allowed_headers and exposed_headers must be lists of strings";
  size_t n = 0;
  char *buf = malloc(v.len + 1);
  sluice_json_iter it = sluice_json_iterate(v);
  while (sluice_json_next(&it, NULL, &item)) {
    if (sluice_json_typeof(item) != SLUICE_JSON_STRING) return "allowed_methods, allowed_headers and exposed_headers must be lists of strings";
    sluice_str s = sluice_json_string(item);
    if (star && sluice_str_eq(s, sluice_s("*"))) *star = true;
    if (n) { buf[n++] = ','; buf[n++] = ' '; }
    memcpy(buf + n, s.ptr, s.len);
    n += s.len;
  }
  buf[n] = 0;
  *out = (sluice_str){buf, n};
  return NULL;
}

const char *sluice_on_setup(void) {
  sluice_str cfg = sluice_config(), v, item;
  if (sluice_json_typeof(cfg) != SLUICE_JSON_OBJECT) return "config must be an object";
  if (!sluice_json_get(cfg, "allowed_origins", &v) || sluice_json_typeof(v) != SLUICE_JSON_ARRAY)
    return "allowed_origins is required: a list of origins (\"https://app.example.com\") or [\"*\"]";
  sluice_json_iter it = sluice_json_iterate(v);
  while (sluice_json_next(&it, NULL, &item)) {
    if (sluice_json_typeof(item) != SLUICE_JSON_STRING) return "allowed_origins must be a list of strings";
    sluice_str o = sluice_json_string(item);
    if (sluice_str_eq(o, sluice_s("*"))) any_origin = true;
    origins = realloc(origins, sizeof(sluice_str) * (norigins + 1));
    origins[norigins++] = o;
  }
  const char *err = join(cfg, "allowed_methods", &methods, NULL);
  if (!err) err = join(cfg, "allowed_headers", &allow_headers, NULL);
  if (!err) err = join(cfg, "exposed_headers", &expose_headers, NULL);
  if (err) return err;
  if (sluice_json_get(cfg, "allow_credentials", &v)) {
    if (sluice_json_typeof(v) != SLUICE_JSON_BOOL) return "allow_credentials must be true or false";
    credentials = sluice_json_bool(v, false);
  }
  if (sluice_json_get(cfg, "max_age", &v)) {
    if (sluice_json_typeof(v) != SLUICE_JSON_NUMBER || sluice_json_int(v, -1) < 0)
      return "max_age must be a number of seconds";
    max_age = sluice_str_dup((sluice_str){v.ptr, v.len});
    for (size_t i = 0; i < max_age.len; i++)
      if (max_age.ptr[i] == '.') max_age.len = i; /* whole seconds */
  }
  return NULL;
}

static bool allowed(sluice_str origin) {
  if (any_origin) return true;
  for (size_t i = 0; i < norigins; i++)
    if (sluice_str_eq_fold(origins[i], origin)) return true;
  return false;
}

/* allow_origin sets Access-Control-Allow-Origin (and credentials) on the
 * response; vary adds "Vary: Origin" when the answer depends on it (a
 * preflight has its own, longer Vary already: one field, not two). */
static void allow_origin(sluice_str origin, bool vary) {
  /* "*" cannot carry credentials: echo the origin instead. */
  if (any_origin && !credentials) {
    sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Allow-Origin"), sluice_s("*"));
  } else {
    sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Allow-Origin"), origin);
    if (vary) sluice_header_add(SLUICE_RESPONSE, sluice_s("Vary"), sluice_s("Origin"));
  }
  if (credentials) sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Allow-Credentials"), sluice_s("true"));
}

int sluice_on_request(void) {
  sluice_str origin, want;
  if (!sluice_header_get(SLUICE_REQUEST, sluice_s("Origin"), &origin)) return SLUICE_CONTINUE;
  bool preflight = sluice_str_eq(sluice_method(), sluice_s("OPTIONS")) &&
                   sluice_header_get(SLUICE_REQUEST, sluice_s("Access-Control-Request-Method"), &want);
  if (!preflight) {
    /* Actual request: the CORS headers go on the next handler's response. */
    if (allowed(origin)) sluice_enable_features(SLUICE_BUFFER_RESPONSE);
    return SLUICE_CONTINUE;
  }
  sluice_set_status(204);
  sluice_header_add(SLUICE_RESPONSE, sluice_s("Vary"), sluice_s("Origin, Access-Control-Request-Method, Access-Control-Request-Headers"));
  if (allowed(origin)) {
    allow_origin(origin, false);
    sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Allow-Methods"), methods);
    sluice_str req_headers;
    if (allow_headers.len)
      sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Allow-Headers"), allow_headers);
    else if (sluice_header_get(SLUICE_REQUEST, sluice_s("Access-Control-Request-Headers"), &req_headers))
      sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Allow-Headers"), req_headers);
    if (max_age.len) sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Max-Age"), max_age);
  }
  /* A disallowed origin gets no CORS headers: the browser refuses. */
  return SLUICE_STOP;
}

void sluice_on_response(uint32_t ctx, bool is_error) {
  (void)ctx;
  sluice_str origin;
  if (is_error || !sluice_header_get(SLUICE_REQUEST, sluice_s("Origin"), &origin) || !allowed(origin)) return;
  allow_origin(origin, true);
  if (expose_headers.len) sluice_header_set(SLUICE_RESPONSE, sluice_s("Access-Control-Expose-Headers"), expose_headers);
}
