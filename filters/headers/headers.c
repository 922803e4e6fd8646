/* headers: sets, adds and removes request and response header fields.
 * Order within a side: remove, then set, then add. */
#include "sluice.h"

#include <stdlib.h>

typedef struct {
  sluice_str name, value;
} field;

typedef struct {
  sluice_str *remove;
  size_t nremove;
  field *set, *add;
  size_t nset, nadd;
} changes;

static changes req, resp;

static const char *fields(sluice_str side, const char *what, field **out, size_t *n) {
  sluice_str v, k, item;
  if (!sluice_json_get(side, what, &v)) return NULL;
  if (sluice_json_typeof(v) != SLUICE_JSON_OBJECT) return "set and add must be maps of header name to value";
  sluice_json_iter it = sluice_json_iterate(v);
  while (sluice_json_next(&it, &k, &item)) {
    if (k.len == 0) return "empty header name";
    sluice_json_iter vals = sluice_json_iterate(item);
    bool list = sluice_json_typeof(item) == SLUICE_JSON_ARRAY;
    sluice_str one = item;
    while (list ? sluice_json_next(&vals, NULL, &one) : one.ptr != NULL) {
      if (sluice_json_typeof(one) != SLUICE_JSON_STRING) return "header values must be strings (or, for add, lists of strings)";
      *out = realloc(*out, sizeof(field) * (*n + 1));
      (*out)[(*n)++] = (field){k, sluice_json_string(one)};
      if (!list) one.ptr = NULL;
    }
  }
  return NULL;
}

static const char *side(sluice_str cfg, const char *name, changes *c) {
  sluice_str s, v, item;
  if (!sluice_json_get(cfg, name, &s)) return NULL;
  if (sluice_json_typeof(s) != SLUICE_JSON_OBJECT) return "request and response must be objects with set, add and remove";
  sluice_json_iter keys = sluice_json_iterate(s);
  sluice_str key;
  while (sluice_json_next(&keys, &key, NULL))
    if (!sluice_str_eq(key, sluice_s("set")) && !sluice_str_eq(key, sluice_s("add")) &&
        !sluice_str_eq(key, sluice_s("remove")))
      return "unknown field: request and response take set, add and remove";
  const char *err = fields(s, "set", &c->set, &c->nset);
  if (!err) err = fields(s, "add", &c->add, &c->nadd);
  if (err) return err;
  if (sluice_json_get(s, "remove", &v)) {
    if (sluice_json_typeof(v) != SLUICE_JSON_ARRAY) return "remove must be a list of header names";
    sluice_json_iter it = sluice_json_iterate(v);
    while (sluice_json_next(&it, NULL, &item)) {
      if (sluice_json_typeof(item) != SLUICE_JSON_STRING) return "remove must be a list of header names";
      c->remove = realloc(c->remove, sizeof(sluice_str) * (c->nremove + 1));
      c->remove[c->nremove++] = sluice_json_string(item);
    }
  }
  return NULL;
}

const char *sluice_on_setup(void) {
  sluice_str cfg = sluice_config(), key;
  if (sluice_json_typeof(cfg) != SLUICE_JSON_OBJECT) return "config must be an object";
  sluice_json_iter keys = sluice_json_iterate(cfg);
  while (sluice_json_next(&keys, &key, NULL))
    if (!sluice_str_eq(key, sluice_s("request")) && !sluice_str_eq(key, sluice_s("response")))
      return "unknown field: the config takes request and response";
  const char *err = side(cfg, "request", &req);
  if (!err) err = side(cfg, "response", &resp);
  if (err) return err;
  /* Changing the next handler's response needs it buffered. */
  if (resp.nremove + resp.nset + resp.nadd > 0) sluice_enable_features(SLUICE_BUFFER_RESPONSE);
  return NULL;
}

static void apply(uint32_t kind, const changes *c) {
  for (size_t i = 0; i < c->nremove; i++) sluice_header_remove(kind, c->remove[i]);
  for (size_t i = 0; i < c->nset; i++) sluice_header_set(kind, c->set[i].name, c->set[i].value);
  for (size_t i = 0; i < c->nadd; i++) sluice_header_add(kind, c->add[i].name, c->add[i].value);
}

int sluice_on_request(void) {
  apply(SLUICE_REQUEST, &req);
  return SLUICE_CONTINUE;
}

void sluice_on_response(uint32_t ctx, bool is_error) {
  (void)ctx;
  if (!is_error) apply(SLUICE_RESPONSE, &resp);
}
