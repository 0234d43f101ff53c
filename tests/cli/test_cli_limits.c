/* The command line on programs shaped to exhaust it: deep block nesting, many blocks. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/program/program.h"
#include "rill.h"
#include "support/shell.h"

#define RILL RILL_BINARY_DIR "/rill"


/* A program of `nblocks` blocks: block b > 0 has parent b - 1 when `chain`, else 0. Every
 * block declares one variable and has one op reading block 0's `x` and writing it. */
static rill_program *blocks_program(size_t nblocks, bool chain) {
  rill_program *p;
  cr_assert_null(rill_program_create(&p));
  const int64_t dims[] = {2};
  for (size_t b = 0; b < nblocks; b++) {
    int32_t idx = 0;
    if (b > 0) {
      rill_status *st = rill_program_append_block(p, chain ? (int32_t)b - 1 : 0, &idx);
      cr_assert_null(st, "block %zu: %s", b, rill_status_message(st));
    }
    char name[32];
    snprintf(name, sizeof name, b ? "y%zu" : "x", b);
    cr_assert_null(rill_block_add_var(p, idx, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1,
                                      0, false));
    rill_op_builder *ob;
    const char *in = "x", *out = name;
    cr_assert_null(rill_op_builder_create("assign", &ob));
    cr_assert_null(rill_op_builder_input(ob, "X", &in, 1));
    cr_assert_null(rill_op_builder_output(ob, "Out", &out, 1));
    cr_assert_null(rill_op_builder_append(ob, p, idx));
    rill_op_builder_destroy(ob);
  }
  return p;
}

static void write_program(const rill_program *p, char *path) {
  void *bytes;
  size_t size;
  cr_assert_null(rill_program_serialize(p, &bytes, &size));
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, bytes, size), (ssize_t)size);
  close(fd);
  rill_free_buffer(bytes);
}

/* One block past the limit, through the file: every command that loads it says the
 * depth and the limit, and none crashes. */
Test(cli_limits, nesting_past_the_limit_is_refused_by_every_command) {
  rill_program *p = blocks_program(RILL_MAX_BLOCK_DEPTH + 1, true);
  int32_t idx;
  /* The API refuses the deeper block, so it is made flat and then re-parented. */
  rill_status *st = rill_program_append_block(p, RILL_MAX_BLOCK_DEPTH, &idx);
  cr_assert_not_null(st, "the API allowed depth %d", RILL_MAX_BLOCK_DEPTH + 1);
  rill_status_destroy(st);
  cr_assert_null(rill_program_append_block(p, 0, &idx));
  p->blocks[idx].parent_idx = RILL_MAX_BLOCK_DEPTH;
  char path[] = "/tmp/rill_deep_XXXXXX";
  write_program(p, path);
  rill_program_destroy(p);
  char want[128];
  snprintf(want, sizeof want, "block %" PRId32 " is nested %d levels deep (the limit is "
           "RILL_MAX_BLOCK_DEPTH, %d)", idx, RILL_MAX_BLOCK_DEPTH + 1, RILL_MAX_BLOCK_DEPTH);
  const char *const cmds[] = {"dot", "inspect", "run"};
  for (size_t i = 0; i < 3; i++) {
    char *out;
    int rc = sh(&out, "'%s' %s '%s' 2>&1", RILL, cmds[i], path);
    cr_assert_eq(rc, 1, "%s: exit %d\n%.2000s", cmds[i], rc, out);
    cr_assert(strstr(out, want), "%s: %.2000s", cmds[i], out);
    free(out);
  }
  unlink(path);
}

/* Nesting just under the limit draws, and in a 256 KiB stack: the walk keeps its own. */
Test(cli_limits, dot_draws_deep_nesting_in_a_small_stack) {
  size_t depth = RILL_MAX_BLOCK_DEPTH - 6;
  rill_program *p = blocks_program(depth + 1, true);
  char path[] = "/tmp/rill_deep_XXXXXX";
  write_program(p, path);
  rill_program_destroy(p);
  char *out;
  int rc = sh(&out, "ulimit -s 256 && timeout 60 '%s' dot '%s' 2>&1", RILL, path);
  cr_assert_eq(rc, 0, "exit %d\n%.2000s", rc, out);
  char want[64];
  snprintf(want, sizeof want, "subgraph cluster_b%zu {", depth);
  cr_assert(strstr(out, want), "no cluster for the deepest block");
  /* Every cluster is closed: one '{' per block (the digraph's and each cluster's) and as
   * many '}' lines. */
  size_t open = 0, close_ = 0;
  for (char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    const char *t = line + strspn(line, " ");
    if (strncmp(t, "}\n", 2) == 0) close_++;
    if (strncmp(t, "subgraph cluster_b", 18) == 0 || strncmp(t, "digraph", 7) == 0) open++;
  }
  cr_assert_eq(open, depth + 1);
  cr_assert_eq(close_, depth + 1);
  snprintf(want, sizeof want, "v0_0 -> op%zu_0", depth);
  cr_assert(strstr(out, want), "the deepest op reads block 0's x");
  free(out);
  unlink(path);
}

/* Time grows with the program, not its square: 100,000 blocks in well under the bound. */
Test(cli_limits, dot_of_many_blocks_is_linear, .timeout = 120) {
  size_t n = 100000;
  rill_program *p = blocks_program(n, false);
  char path[] = "/tmp/rill_wide_XXXXXX";
  write_program(p, path);
  rill_program_destroy(p);
  char *out;
  int rc = sh(&out, "timeout 20 '%s' dot '%s' -o '%s.dot' 2>&1", RILL, path, path);
  cr_assert_eq(rc, 0, "exit %d (124: over 20 s)\n%.2000s", rc, out);
  cr_assert(strstr(out, "(100000 blocks)"), "%s", out);
  free(out);
  char dot[64];
  snprintf(dot, sizeof dot, "%s.dot", path);
  struct stat sb;
  cr_assert_eq(stat(dot, &sb), 0);
  cr_assert_gt(sb.st_size, 100000 * 20);
  unlink(dot);
  unlink(path);
}

/* -o names a pipe (or /dev/stdout, /dev/null): the drawing goes into it, and the pipe is
 * still a pipe after, not a plain file renamed over it. */
Test(cli_limits, dot_writes_into_a_named_pipe, .timeout = 60) {
  rill_program *p = blocks_program(3, false);
  char path[] = "/tmp/rill_pipe_XXXXXX";
  write_program(p, path);
  rill_program_destroy(p);
  char fifo[64];
  snprintf(fifo, sizeof fifo, "%s.fifo", path);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  char *out;
  int rc = sh(&out, "cat '%s' > '%s.got' & timeout 20 '%s' dot '%s' -o '%s' 2>&1; s=$?; wait; exit $s",
              fifo, path, RILL, path, fifo);
  cr_assert_eq(rc, 0, "exit %d\n%.2000s", rc, out);
  free(out);
  struct stat sb;
  cr_assert_eq(lstat(fifo, &sb), 0);
  cr_assert(S_ISFIFO(sb.st_mode), "the pipe was replaced by a plain file");
  char got[64];
  snprintf(got, sizeof got, "%s.got", path);
  FILE *f = fopen(got, "r");
  cr_assert_not_null(f);
  char head[16] = {0};
  cr_assert_gt(fread(head, 1, sizeof head - 1, f), 0);
  fclose(f);
  cr_assert(strncmp(head, "digraph", 7) == 0, "%s", head);
  unlink(got);
  unlink(fifo);
  unlink(path);
}
