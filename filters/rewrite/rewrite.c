/* rewrite: rewrites request paths (prefix strip and add, regular
 * expressions with captures) and answers redirects. */
#include "sluice.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  regex_t re;
  sluice_str replace;
  int redirect; /* 0: rewrite in place; else the redirect status */
} rule;

static sluice_str strip_prefix, add_prefix;
static rule *rules;
static size_t nrules;
static char errbuf[256];

static const char *str_field(sluice_str obj, const char *name, sluice_str *out, const char *msg) {
  sluice_str v;
  if (!sluice_json_get(obj, name, &v)) return NULL;
  if (sluice_json_typeof(v) != SLUICE_JSON_STRING) return msg;
  *out = sluice_json_string(v);
  return NULL;
}

const char *sluice_on_setup(void) {
  sluice_str cfg = sluice_config(), v, item, key;
  if (sluice_json_typeof(cfg) != SLUICE_JSON_OBJECT) return "config must be an object";
  const char *err = str_field(cfg, "strip_prefix", &strip_prefix, "strip_prefix must be a string");
  if (!err) err = str_field(cfg, "add_prefix", &add_prefix, "add_prefix must be a string");
  if (err) return err;
  if (add_prefix.len && add_prefix.ptr[0] != '/') return "add_prefix must start with /";
  if (!sluice_json_get(cfg, "rules", &v)) return NULL;
  if (sluice_json_typeof(v) != SLUICE_JSON_ARRAY) return "rules must be a list of {match, replace, redirect}";
  sluice_json_iter it = sluice_json_iterate(v);
  while (sluice_json_next(&it, NULL, &item)) {
    if (sluice_json_typeof(item) != SLUICE_JSON_OBJECT) return "rules must be a list of {match, replace, redirect}";
    sluice_json_iter fields = sluice_json_iterate(item);
    while (sluice_json_next(&fields, &key, NULL))
      if (!sluice_str_eq(key, sluice_s("match")) && !sluice_str_eq(key, sluice_s("replace")) &&
          !sluice_str_eq(key, sluice_s("redirect")))
        return "unknown field in a rule: rules take match, replace and redirect";
    sluice_str match = {0}, replace = {0};
    if ((err = str_field(item, "match", &match, "match must be a string"))) return err;
    if ((err = str_field(item, "replace", &replace, "replace must be a string"))) return err;
    if (!match.ptr || !replace.ptr) return "each rule needs match (a regular expression) and replace";
    rules = realloc(rules, sizeof(rule) * (nrules + 1));
    rule *r = &rules[nrules];
    memset(r, 0, sizeof *r);
    r->replace = replace;
    if (sluice_json_get(item, "redirect", &v)) {
      long long s = sluice_json_int(v, 0);
      if (s != 301 && s != 302 && s != 303 && s != 307 && s != 308) return "redirect must be 301, 302, 303, 307 or 308";
      r->redirect = (int)s;
    }
    if (!r->redirect && (replace.len == 0 || replace.ptr[0] != '/'))
      return "replace must start with / (only a redirect may point to another host)";
    int rc = regcomp(&r->re, match.ptr, REG_EXTENDED);
    if (rc != 0) {
      static const char prefix[] = "invalid match: ";
      memcpy(errbuf, prefix, sizeof prefix);
      regerror(rc, &r->re, errbuf + sizeof prefix - 1, sizeof errbuf - sizeof prefix);
      return errbuf;
    }
    nrules++;
  }
  return NULL;
}

/* expand writes replace with $0..$9 taken from subject. */
static sluice_str expand(sluice_str replace, const char *subject, const regmatch_t *m) {
  size_t n = 0, cap = replace.len + 1;
  for (size_t i = 0; i + 1 < replace.len; i++)
    if (replace.ptr[i] == '$' && replace.ptr[i + 1] >= '0' && replace.ptr[i + 1] <= '9') cap += strlen(subject);
  char *out = sluice_alloc(cap);
  for (size_t i = 0; i < replace.len; i++) {
    char c = replace.ptr[i];
    if (c == '$' && i + 1 < replace.len) {
      char d = replace.ptr[i + 1];
      if (d == '$') { out[n++] = '$'; i++; continue; }
      if (d >= '0' && d <= '9') {
        const regmatch_t *g = &m[d - '0'];
        if (g->rm_so >= 0) {
          memcpy(out + n, subject + g->rm_so, (size_t)(g->rm_eo - g->rm_so));
          n += (size_t)(g->rm_eo - g->rm_so);
        }
        i++;
        continue;
      }
    }
    out[n++] = c;
  }
  out[n] = 0;
  return (sluice_str){out, n};
}

static sluice_str concat(sluice_str a, sluice_str b, sluice_str c) {
  char *p = sluice_alloc(a.len + b.len + c.len);
  memcpy(p, a.ptr, a.len);
  memcpy(p + a.len, b.ptr, b.len);
  memcpy(p + a.len + b.len, c.ptr, c.len);
  p[a.len + b.len + c.len] = 0;
  return (sluice_str){p, a.len + b.len + c.len};
}

int sluice_on_request(void) {
  sluice_str uri = sluice_uri(), orig = uri;
  const char *q = memchr(uri.ptr, '?', uri.len);
  sluice_str path = {uri.ptr, q ? (size_t)(q - uri.ptr) : uri.len};
  sluice_str query = {q ? q : "", q ? uri.len - path.len : 0};

  if (strip_prefix.len && sluice_str_has_prefix(path, strip_prefix)) {
    path.ptr += strip_prefix.len;
    path.len -= strip_prefix.len;
    if (path.len == 0 || path.ptr[0] != '/') path = concat(sluice_s("/"), path, (sluice_str){"", 0});
  }
  if (add_prefix.len) {
    sluice_str pre = add_prefix;
    if (pre.ptr[pre.len - 1] == '/' && path.len && path.ptr[0] == '/') pre.len--;
    path = concat(pre, path, (sluice_str){"", 0});
  }
  sluice_str subject = sluice_str_dup(path); /* NUL-terminated for regexec */
  for (size_t i = 0; i < nrules; i++) {
    regmatch_t m[10];
    if (regexec(&rules[i].re, subject.ptr, 10, m, 0) != 0) continue;
    sluice_str to = expand(rules[i].replace, subject.ptr, m);
    free((void *)subject.ptr);
    /* A replacement with its own query replaces the query. */
    sluice_str target = memchr(to.ptr, '?', to.len) ? to : concat(to, query, (sluice_str){"", 0});
    if (rules[i].redirect) {
      sluice_header_set(SLUICE_RESPONSE, sluice_s("Location"), target);
      sluice_respond(rules[i].redirect, (sluice_str){"", 0}, (sluice_str){"", 0});
      return SLUICE_STOP;
    }
    if (!sluice_str_eq(target, orig)) sluice_set_uri(target);
    return SLUICE_CONTINUE;
  }
  free((void *)subject.ptr);
  sluice_str target = concat(path, query, (sluice_str){"", 0});
  if (!sluice_str_eq(target, orig)) sluice_set_uri(target);
  return SLUICE_CONTINUE;
}
