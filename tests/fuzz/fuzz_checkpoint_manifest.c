/* libFuzzer target for the checkpoint manifest reader (framework/io/checkpoint.c): the
 * input is the manifest's body; the target adds the first line and the checksummed end
 * line, so the fuzzer reaches the record parser instead of stopping at the checksum.
 * The checkpoint directory holds one valid variable file, `w` (float32 [2, 3]), so
 * var lines can name a real file. Whatever the body, reading gives an error or a
 * snapshot whose variables each hold the bytes of a file that verified.
 *
 *   CC=clang cmake -S . -B build-fuzz -DRILL_FUZZ=ON -DRILL_BUILD_TESTS=OFF -DRILL_BUILD_BENCH=OFF
 *   cmake --build build-fuzz --target fuzz_checkpoint_manifest
 *   build-fuzz/fuzz_checkpoint_manifest -max_total_time=20 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/checkpoint.h"
#include "framework/io/crc32c.h"
#include "framework/io/file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void cleanup(void) { rill_status_destroy(rill_dir_remove_tree(dir)); }

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/fuzz_ckpt_%ld", (long)getpid());
  if (rill_dir_make(dir)) abort();
  float w[6] = {1, 2, 3, 4, 5, 6};
  int64_t d[2] = {2, 3};
  rill_tensor *t;
  if (rill_tensor_create_from_data(RILL_DTYPE_FP32, d, 2, w, sizeof w, NULL, NULL, &t)) abort();
  char path[128];
  snprintf(path, sizeof path, "%s/w", dir);
  if (rill_tensor_save_file(t, path)) abort();
  rill_tensor_destroy(t);
  atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) setup();
  static const char magic[] = "rill checkpoint 1\n";
  size_t n = sizeof magic - 1 + size;
  uint8_t *m = malloc(n + 16);
  memcpy(m, magic, sizeof magic - 1);
  memcpy(m + sizeof magic - 1, data, size);
  if (size && m[n - 1] != '\n') m[n++] = '\n';
  uint32_t crc = rill_crc32c(0, m, n);
  n += (size_t)snprintf((char *)m + n, 16, "end %08x\n", crc);
  char path[128];
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  if (rill_file_write(path, m, n)) abort();
  free(m);
  rill_ckpt_snapshot s;
  rill_ckpt_snapshot_init(&s);
  rill_status *st = rill_ckpt_read(dir, &s);
  if (st) {
    if (rill_status_code(st) == RILL_OK) abort();
    rill_status_destroy(st);
    return 0;
  }
  for (size_t i = 0; i < s.n; i++) /* only `w` exists, so only `w` can verify */
    if (strcmp(s.names[i], "w") != 0 || rill_tensor_nbytes(&s.tensors[i]) != 24) abort();
  rill_ckpt_snapshot_clear(&s);
  return 0;
}
