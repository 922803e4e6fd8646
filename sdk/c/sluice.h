/*
 * sluice.h: write sluice filters in C. A filter is a WebAssembly guest of
 * the http-wasm http_handler ABI (see sdk/ABI.md), built as a WASI reactor:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -Oz -Wl,--strip-all \
 *         -I sdk/c -o filter.wasm filter.c sdk/c/sluice.c
 *
 * The filter defines sluice_on_request (and, optionally, sluice_on_setup
 * and sluice_on_response); sluice.c exports the ABI's handle_request and
 * handle_response and calls them.
 *
 * Memory: strings returned by the host getters (sluice_uri, header
 * values, bodies) live in a per-call arena freed when the current guest
 * call returns: copy with sluice_str_dup to keep one longer. Strings from
 * sluice_config and sluice_json_string are malloc'd and never freed by
 * the SDK.
 *
 * Instances are pooled: globals persist across requests, and an instance
 * may serve other requests while one waits on its upstream. Keep
 * per-request state keyed by the request context (sluice_set_req_ctx).
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A byte string: not NUL-terminated. */
typedef struct {
  const char *ptr;
  size_t len;
} sluice_str;

/* sluice_s("literal") makes a sluice_str of a C string literal. */
#define sluice_s(lit) ((sluice_str){(lit), sizeof(lit) - 1})
sluice_str sluice_cstr(const char *s);
bool sluice_str_eq(sluice_str a, sluice_str b);
bool sluice_str_eq_fold(sluice_str a, sluice_str b); /* ASCII case-insensitive */
bool sluice_str_has_prefix(sluice_str s, sluice_str prefix);
/* sluice_str_dup copies s to malloc'd memory (NUL-terminated). */
sluice_str sluice_str_dup(sluice_str s);

/* A list of strings, in the per-call arena. */
typedef struct {
  sluice_str *items;
  size_t len;
} sluice_strs;

/* --- What the filter defines ------------------------------------------ */

/* Results of sluice_on_request. */
#define SLUICE_STOP 0     /* the filter answered: send the response as set */
#define SLUICE_CONTINUE 1 /* run the next handler */

/* sluice_on_setup runs once per instance before any request (optional:
 * the default does nothing). Return NULL on success, or a message: the
 * instance then fails to start, so the filter fails to load and the
 * operator sees the message. Read the config here. */
const char *sluice_on_setup(void);

/* sluice_on_request handles one request: read or rewrite it, or answer it
 * (set status, headers and body) and return SLUICE_STOP. Required. */
int sluice_on_request(void);

/* sluice_on_response runs after the next handler for requests that
 * continued (optional). req_ctx is what sluice_set_req_ctx set during the
 * request (0 if nothing). Changing the response here needs
 * SLUICE_BUFFER_RESPONSE. */
void sluice_on_response(uint32_t req_ctx, bool is_error);

/* sluice_set_req_ctx sets the value handed to sluice_on_response for the
 * current request: the key of any per-request state. */
void sluice_set_req_ctx(uint32_t ctx);

/* --- Features ---------------------------------------------------------- */

#define SLUICE_BUFFER_REQUEST 1u
#define SLUICE_BUFFER_RESPONSE 2u
#define SLUICE_TRAILERS 4u
/* Returns the features now enabled. In sluice_on_setup: every request;
 * in sluice_on_request: this request. */
uint32_t sluice_enable_features(uint32_t features);

/* --- Config and logging ------------------------------------------------ */

/* The filter's config: the HCL `config` value as JSON ("{}" when absent).
 * Fetched once; malloc'd; NUL-terminated. */
sluice_str sluice_config(void);

#define SLUICE_LOG_DEBUG (-1)
#define SLUICE_LOG_INFO 0
#define SLUICE_LOG_WARN 1
#define SLUICE_LOG_ERROR 2
bool sluice_log_enabled(int level);
void sluice_log(int level, sluice_str msg);
/* Logs msg with key/value fields when level is enabled: the arguments
 * after msg are sluice_str key, value, key, value…, ended by SLUICE_KV_END
 * (a value with a NULL ptr, like an absent header, is "").
 * The fields follow the message in logfmt, as in every SDK (see
 * sdk/README.md): `denied path=/admin/x reason="no token"`; a value is
 * quoted when empty or holding a space, '=', '"' or a control byte.
 *   sluice_log_kv(SLUICE_LOG_INFO, sluice_s("denied"),
 *                 sluice_s("path"), sluice_path(), SLUICE_KV_END); */
#define SLUICE_KV_END ((sluice_str){0, (size_t)-1})
void sluice_log_kv(int level, sluice_str msg, ...);

/* --- Request ----------------------------------------------------------- */

sluice_str sluice_method(void);
void sluice_set_method(sluice_str method);
/* The path and query as sent: "/a/b?x=1". */
sluice_str sluice_uri(void);
void sluice_set_uri(sluice_str uri);
/* The URI up to '?', still percent-encoded. */
sluice_str sluice_path(void);
/* The URI after the first '?', still percent-encoded ("" when none). */
sluice_str sluice_raw_query(void);
/* The first value of query parameter name, percent-decoded. */
bool sluice_query(sluice_str name, sluice_str *value);
sluice_str sluice_protocol(void);
sluice_str sluice_source_addr(void);

/* --- Headers: kind is SLUICE_REQUEST or SLUICE_RESPONSE ----------------- */

#define SLUICE_REQUEST 0u
#define SLUICE_RESPONSE 1u
/* Distinct names, lower case. */
sluice_strs sluice_header_names(uint32_t kind);
sluice_strs sluice_header_values(uint32_t kind, sluice_str name);
/* The first value of name; false when absent. */
bool sluice_header_get(uint32_t kind, sluice_str name, sluice_str *value);
void sluice_header_set(uint32_t kind, sluice_str name, sluice_str value);
void sluice_header_add(uint32_t kind, sluice_str name, sluice_str value);
void sluice_header_remove(uint32_t kind, sluice_str name);

/* --- Bodies and status ------------------------------------------------- */

/* Reads the rest of the body (request: consumes it unless
 * SLUICE_BUFFER_REQUEST). */
sluice_str sluice_body_read_all(uint32_t kind);
/* Appends to the body; the first write replaces it. */
void sluice_body_write(uint32_t kind, sluice_str data);
int sluice_status(void);
void sluice_set_status(int code);

/* sluice_respond answers the request: status, a Content-Type when
 * content_type is not empty, and body. Return SLUICE_STOP after it. */
void sluice_respond(int status, sluice_str content_type, sluice_str body);

/* --- JSON (reading the config) ----------------------------------------- */

/* A JSON value is a sluice_str holding its source text. */
typedef enum {
  SLUICE_JSON_INVALID,
  SLUICE_JSON_NULL,
  SLUICE_JSON_BOOL,
  SLUICE_JSON_NUMBER,
  SLUICE_JSON_STRING,
  SLUICE_JSON_ARRAY,
  SLUICE_JSON_OBJECT
} sluice_json_type;

sluice_json_type sluice_json_typeof(sluice_str v);
/* The member key of object obj; false when absent or obj is no object. */
bool sluice_json_get(sluice_str obj, const char *key, sluice_str *value);
/* Iterates an array or an object: init, then next until it returns false.
 * For objects key receives the decoded key (malloc'd); for arrays pass
 * NULL. */
typedef struct {
  const char *p, *end;
  bool object;
} sluice_json_iter;
sluice_json_iter sluice_json_iterate(sluice_str container);
bool sluice_json_next(sluice_json_iter *it, sluice_str *key, sluice_str *value);
/* The decoded string (malloc'd, NUL-terminated); {NULL, 0} when v is not a
 * string. */
sluice_str sluice_json_string(sluice_str v);
bool sluice_json_bool(sluice_str v, bool dflt);
long long sluice_json_int(sluice_str v, long long dflt);

/* sluice_alloc allocates n bytes in the per-call arena. */
void *sluice_alloc(size_t n);

#ifdef __cplusplus
}
#endif
#endif
