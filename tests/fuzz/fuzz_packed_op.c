/* libFuzzer target for rill_block_insert_op_packed: whatever the bytes, the call gives
 * an error and leaves the program's op list as it was, or adds exactly one op whose
 * type is the description's first field; with inference on, an op that stays in the
 * program was inferred without error. The program declares x [-1, 4], w [4, 3] and
 * out (no tensor description), so descriptions can name real variables.
 *
 *   CC=clang cmake -S . -B build-fuzz -DRILL_FUZZ=ON -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_BENCH=OFF
 *   cmake --build build-fuzz --target fuzz_packed_op
 *   build-fuzz/fuzz_packed_op -max_total_time=20 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rill.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rill_program *declared(void) {
  rill_program *p;
  if (rill_program_create(&p)) abort();
  const int64_t xd[] = {-1, 4}, wd[] = {4, 3};
  if (rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false) ||
      rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0, true) ||
      rill_block_add_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false) ||
      rill_var_set_tensor(p, 0, "out", false, RILL_DTYPE_FP32, NULL, 0, 0))
    abort();
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  bool infer = data[0] & 1;
  const char *spec = (const char *)data + 1;
  size_t len = size - 1;
  rill_program *p = declared();
  rill_status *st = rill_block_insert_op_packed(p, 0, SIZE_MAX, spec, len, infer);
  size_t nops = rill_block_num_ops(p, 0);
  if (st) {
    if (rill_status_code(st) == RILL_OK || !rill_status_message(st)[0] || nops != 0) abort();
    rill_status_destroy(st);
  } else {
    if (nops != 1) abort();
    rill_op_info info;
    if (rill_block_op_info(p, 0, 0, &info)) abort();
    const char *nul = memchr(spec, '\0', len);
    if (!nul || strcmp(info.type, spec) != 0) abort();
    /* what was stored serializes */
    void *bytes = NULL;
    size_t n = 0;
    if (rill_program_serialize(p, &bytes, &n) || !n) abort();
    rill_free_buffer(bytes);
  }
  rill_program_destroy(p);
  return 0;
}
