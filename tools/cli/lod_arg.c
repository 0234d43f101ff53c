/* Parsing and applying `rill run --lod NAME=SPEC`. */
#include "lod_arg.h"

#include <stdlib.h>
#include <string.h>

void lod_arg_clear(lod_arg *lod) {
  for (size_t i = 0; i < lod->nlevels; i++) free(lod->levels[i]);
  free(lod->levels);
  free(lod->counts);
  free(lod->name);
  memset(lod, 0, sizeof *lod);
}

/* Parses one level "a,b,c" (ending at `end`) into a new array. */
static rill_status *parse_level(const char *arg, const char *s, const char *end, size_t level,
                                uint64_t **out, size_t *count) {
  size_t n = 1;
  for (const char *p = s; p < end; p++) n += *p == ',';
  uint64_t *v = calloc(n, sizeof *v);
  if (!v) return rill_status_create(RILL_OUT_OF_MEMORY, "out of memory");
  size_t k = 0;
  for (const char *p = s; k < n; k++) {
    const char *q = p;
    while (q < end && *q != ',') q++;
    if (q == p) {
      free(v);
      return rill_status_create(RILL_INVALID_ARGUMENT, "--lod %s: level %zu has an empty offset (offsets "
                        "are comma-separated integers, levels separated by ';')", arg, level);
    }
    uint64_t x = 0;
    for (const char *c = p; c < q; c++) {
      if (*c < '0' || *c > '9' || x > (UINT64_MAX - (uint64_t)(*c - '0')) / 10) {
        free(v);
        return rill_status_create(RILL_INVALID_ARGUMENT, "--lod %s: level %zu offset %zu ('%.*s') is not "
                          "a non-negative integer", arg, level, k, (int)(q - p), p);
      }
      x = x * 10 + (uint64_t)(*c - '0');
    }
    v[k] = x;
    p = q + 1;
  }
  *out = v;
  *count = n;
  return NULL;
}

rill_status *lod_arg_parse(const char *arg, lod_arg *out) {
  memset(out, 0, sizeof *out);
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg)
    return rill_status_create(RILL_INVALID_ARGUMENT, "--lod %s: expected NAME=OFFSETS, e.g. x=0,3,7 or "
                      "'x=0,2;0,1,3'", arg);
  const char *spec = eq + 1;
  if (!*spec) return rill_status_create(RILL_INVALID_ARGUMENT, "--lod %s: no offsets after '='", arg);
  size_t nlevels = 1;
  for (const char *p = spec; *p; p++) nlevels += *p == ';';
  lod_arg l = {0};
  l.name = malloc((size_t)(eq - arg) + 1);
  if (l.name) {
    memcpy(l.name, arg, (size_t)(eq - arg));
    l.name[eq - arg] = 0;
  }
  l.levels = calloc(nlevels, sizeof *l.levels);
  l.counts = calloc(nlevels, sizeof *l.counts);
  if (!l.name || !l.levels || !l.counts) {
    lod_arg_clear(&l);
    return rill_status_create(RILL_OUT_OF_MEMORY, "out of memory");
  }
  const char *p = spec;
  for (size_t i = 0; i < nlevels; i++) {
    const char *end = strchr(p, ';');
    if (!end) end = p + strlen(p);
    rill_status *st = parse_level(arg, p, end, i, &l.levels[i], &l.counts[i]);
    if (st) {
      lod_arg_clear(&l);
      return st;
    }
    l.nlevels = i + 1;
    p = end + 1;
  }
  *out = l;
  return NULL;
}

rill_status *lod_arg_apply(const lod_arg *lod, rill_tensor *t) {
  rill_status *st = rill_tensor_set_lod(t, lod->nlevels, (const uint64_t *const *)lod->levels,
                                        lod->counts);
  if (!st) return NULL;
  const int64_t *d = rill_tensor_dims(t);
  return rill_status_wrap(st, "--lod for input '%s' (first dimension %lld; offsets must start at "
                          "0, never decrease, and end at the next level's sequence count, the "
                          "last level at the first dimension)", lod->name,
                          (long long)(rill_tensor_ndim(t) ? d[0] : 0));
}
