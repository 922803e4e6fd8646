/* The custom-filter example in C: adds a header from its config to every
 * request, tags every response it lets through, and answers 403 to paths
 * under a prefix (and logs it). */
#include "sluice.h"

static sluice_str header = sluice_s("X-Example");
static sluice_str value;
static sluice_str deny_prefix;

const char *sluice_on_setup(void) {
  sluice_str cfg = sluice_config(), v;
  if (sluice_json_typeof(cfg) != SLUICE_JSON_OBJECT) return "config must be an object";
  if (sluice_json_get(cfg, "header", &v)) header = sluice_json_string(v);
  if (sluice_json_get(cfg, "value", &v)) value = sluice_json_string(v);
  if (sluice_json_get(cfg, "deny_prefix", &v)) deny_prefix = sluice_json_string(v);
  if (!header.ptr || header.len == 0) return "header must be a non-empty string";
  return NULL;
}

int sluice_on_request(void) {
  if (deny_prefix.len && sluice_str_has_prefix(sluice_path(), deny_prefix)) {
    sluice_respond(403, sluice_s("text/plain; charset=utf-8"), sluice_s("forbidden\n"));
    sluice_str agent = {0, 0};
    sluice_header_get(SLUICE_REQUEST, sluice_s("User-Agent"), &agent);
    sluice_log_kv(SLUICE_LOG_INFO, sluice_s("denied"), sluice_s("path"), sluice_path(), sluice_s("agent"), agent,
                  SLUICE_KV_END);
    return SLUICE_STOP;
  }
  sluice_header_set(SLUICE_REQUEST, header, value);
  /* ?debug=… reaches the upstream decoded, as X-Debug; a malformed escape
   * (?debug=%zz) is no error. */
  sluice_str debug;
  if (sluice_query(sluice_s("debug"), &debug)) sluice_header_set(SLUICE_REQUEST, sluice_s("X-Debug"), debug);
  /* Set before continuing: the client gets it with the upstream's
   * response (sdk/ABI.md, "Response headers set before the next handler"). */
  sluice_header_set(SLUICE_RESPONSE, sluice_s("X-Filtered-By"), sluice_s("custom-filter"));
  return SLUICE_CONTINUE;
}
