/* libFuzzer target for `rill run --lod NAME=OFFSETS`: whatever the text, parsing gives an
 * error with nothing allocated, or levels that are all non-empty under a non-empty name;
 * setting them on a tensor then succeeds exactly when the offsets satisfy the LoD rules.
 *
 *   CC=clang cmake -S . -B build-fuzz -DRILL_FUZZ=ON -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_BENCH=OFF
 *   cmake --build build-fuzz --target fuzz_lod_arg
 *   build-fuzz/fuzz_lod_arg -max_total_time=20
 *
 * The parser is part of the command line, not the library, so its source is compiled in
 * here. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli/lod_arg.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The rules, checked independently of the library. */
static bool lod_ok(const lod_arg *l, uint64_t rows) {
  for (size_t i = 0; i < l->nlevels; i++) {
    const uint64_t *o = l->levels[i];
    if (o[0] != 0) return false;
    for (size_t k = 1; k < l->counts[i]; k++)
      if (o[k] < o[k - 1]) return false;
    uint64_t want = i + 1 < l->nlevels ? (uint64_t)(l->counts[i + 1] - 1) : rows;
    if (o[l->counts[i] - 1] != want) return false;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  lod_arg l;
  rill_status *st = lod_arg_parse(s, &l);
  free(s);
  if (st) {
    if (rill_status_code(st) == RILL_OK || l.nlevels || l.name) abort();
    rill_status_destroy(st);
    return 0;
  }
  if (!l.name || !*l.name || l.nlevels < 1) abort();
  for (size_t i = 0; i < l.nlevels; i++)
    if (l.counts[i] < 1 || !l.levels[i]) abort();
  /* a tensor with as many rows as the last level's last offset, when that is small */
  uint64_t rows = l.levels[l.nlevels - 1][l.counts[l.nlevels - 1] - 1];
  if (rows <= 4096) {
    int64_t d[1] = {(int64_t)rows};
    rill_tensor *t = NULL;
    if (rill_tensor_create(RILL_DTYPE_FP32, d, 1, &t)) abort();
    rill_status *ast = lod_arg_apply(&l, t);
    if ((ast == NULL) != lod_ok(&l, rows)) abort();
    if (!ast && rill_tensor_lod_levels(t) != l.nlevels) abort();
    rill_status_destroy(ast);
    rill_tensor_destroy(t);
  }
  lod_arg_clear(&l);
  return 0;
}
