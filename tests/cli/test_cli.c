/* The `rill` command line, run as a process. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/npy.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "support/slurp.h"
#include "rill.h"
#include "support/shell.h"
#include "transform/prog_util.h"

#define RILL RILL_BINARY_DIR "/rill"
#define SHARED RILL_SHARED_DIR


static const char *const models[] = {
    "abalone_bn_mlp",      "fit_a_line_raftliu",  "luotao1_example_mlp_2018",
    "mnist_conv_bn_etienne", "mnist_mlp_handwriting", "paddlejs_gesture_rec",
    "paddlelite_simple_model", "pureboys_word2vec",
};

Test(cli, inspect_prints_targets_of_every_model) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char *out;
    int rc = sh(&out, "'%s' inspect '%s/models/%s' 2>&1", RILL, SHARED, models[i]);
    cr_assert_eq(rc, 0, "%s: exit %d\n%s", models[i], rc, out);
    cr_assert(strstr(out, "feed targets ("), "%s: no feed targets", models[i]);
    cr_assert(strstr(out, "fetch targets ("), "%s: no fetch targets", models[i]);
    cr_assert(strstr(out, "  col 0: "), "%s: no col 0 target", models[i]);
    free(out);
  }
}

Test(cli, inspect_lists_feed_targets_in_col_order) {
  /* word2vec lists its feed ops in reverse col order. */
  char *out;
  int rc = sh(&out, "'%s' inspect '%s/models/pureboys_word2vec' 2>&1", RILL, SHARED);
  cr_assert_eq(rc, 0, "%s", out);
  char *feeds = strstr(out, "feed targets (4)");
  cr_assert_not_null(feeds, "%s", out);
  char *c0 = strstr(feeds, "col 0:"), *c1 = strstr(feeds, "col 1:"), *c3 = strstr(feeds, "col 3:");
  cr_assert(c0 && c1 && c3 && c0 < c1 && c1 < c3);
  free(out);
}

/* Every shared program's ops exist now: these tests take bondh_lac_gru_crf with its gru
 * ops renamed var_conv_2d, an op rill lacks, written to `path` (a mkstemp template). */
static void write_unsupported_program(char *path) {
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  rill_program *p = NULL;
  rill_status *st = rill_program_load(SHARED "/programs/bondh_lac_gru_crf__model__", &p);
  cr_assert_null(st, "%s", rill_status_message(st));
  size_t renamed = 0;
  for (size_t i = 0; i < p->blocks[0].nops; i++) {
    rill_op_desc *op = &p->blocks[0].ops[i];
    if (strcmp(op->type, "gru") != 0) continue;
    rill_free(op->type);
    op->type = rill_strdup("var_conv_2d");
    cr_assert_not_null(op->type);
    renamed++;
  }
  cr_assert_geq(renamed, 1);
  st = rill_program_save(p, path);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_program_destroy(p);
}

Test(cli, inspect_works_with_unsupported_ops) {
  char *out, path[] = "/tmp/rill_cli_unsupported_XXXXXX";
  write_unsupported_program(path);
  int rc = sh(&out, "'%s' inspect '%s' 2>&1", RILL, path);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "var_conv_2d"), "%s", out);
  cr_assert(strstr(out, "(unsupported)"));
  free(out);
  remove(path);
}

Test(cli, run_fit_a_line_reproduces_reference) {
  char dir[] = "/tmp/rill_cli_XXXXXX", *out;
  cr_assert_not_null(mkdtemp(dir));
  int rc = sh(&out, "'%s' run '%s/models/fit_a_line_raftliu' --input x='%s/models/fit_a_line_raftliu/refs/input_x.npy' --output '%s' 2>&1",
              RILL, SHARED, SHARED, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: save_infer_model/scale_0 float32 [4, 1]"), "%s", out);
  cr_assert(strstr(out, "sum: 0.6383"), "%s", out);
  free(out);
  char path[512];
  snprintf(path, sizeof path, "%s/output_0.npy", dir);
  rill_tensor *got, *want;
  rill_status *st = rill_npy_load(path, &got);
  cr_assert_null(st, "%s", rill_status_message(st));
  st = rill_npy_load(SHARED "/models/fit_a_line_raftliu/refs/output_0.npy", &want);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(rill_tensor_numel(got), rill_tensor_numel(want));
  const float *g = rill_tensor_data(got), *w = rill_tensor_data(want);
  for (int64_t i = 0; i < rill_tensor_numel(got); i++)
    cr_assert(fabsf(g[i] - w[i]) <= 1e-5f + 1e-4f * fabsf(w[i]), "[%lld] %g vs %g", (long long)i, g[i], w[i]);
  rill_tensor_destroy(got);
  rill_tensor_destroy(want);
  unlink(path);
  rmdir(dir);
}

Test(cli, run_mnist_prints_argmax_3) {
  char *out;
  int rc = sh(&out, "'%s' run '%s/models/mnist_mlp_handwriting' --input '%s/models/mnist_mlp_handwriting/refs/input_image.npy' 2>&1",
              RILL, SHARED, SHARED);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "argmax per row: 3\n"), "%s", out);
  free(out);
  rc = sh(&out, "'%s' run '%s/models/mnist_mlp_handwriting' --input '%s/models/mnist_mlp_handwriting/refs/input_image.npy' --repeat 3 2>&1",
          RILL, SHARED, SHARED);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "ms/run (3 runs after the first)"), "%s", out);
  free(out);
}

Test(cli, run_under_either_schedule_gives_the_same_answer) {
  const char *const modes[] = {"--sequential", "--parallel --threads 2", "--threads 1", "--parallel"};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    char *out;
    int rc = sh(&out, "'%s' run '%s/models/mnist_mlp_handwriting' --input '%s/models/mnist_mlp_handwriting/refs/input_image.npy' %s 2>&1",
                RILL, SHARED, SHARED, modes[i]);
    cr_assert_eq(rc, 0, "%s: %s", modes[i], out);
    cr_assert(strstr(out, "argmax per row: 3\n"), "%s: %s", modes[i], out);
    free(out);
  }
}

/* The inference passes and the memory plan do not change the answers. */
Test(cli, run_at_every_optimization_level_gives_the_same_answer) {
  const char *const modes[] = {"-O0", "-O 1", "-O2", "-O2 --no-memory-optim", "-O 2 --parallel --threads 2"};
  const char *const nets[][2] = {{"paddlejs_gesture_rec", "input_img"}, {"abalone_bn_mlp", "input_x"},
                                 {"mnist_conv_bn_etienne", "input_img"}};
  for (size_t m = 0; m < 3; m++) {
    char *first = NULL;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
      char *out;
      int rc = sh(&out, "'%s' run '%s/models/%s' --input '%s/models/%s/refs/%s.npy' %s 2>&1", RILL, SHARED,
                  nets[m][0], SHARED, nets[m][0], nets[m][1], modes[i]);
      cr_assert_eq(rc, 0, "%s %s: %s", nets[m][0], modes[i], out);
      char *arg = strstr(out, "first:");
      cr_assert_not_null(arg, "%s", out);
      char *eol = strchr(arg, '\n');
      if (eol) *eol = 0;
      if (!first) {
        first = strdup(arg);
      } else { /* printed with 6 significant digits: equal, or off in the last one */
        char *a = first, *b = arg;
        while (*a && *b) {
          char *ea, *eb;
          double x = strtod(a, &ea), y = strtod(b, &eb);
          if (ea == a || eb == b) {
            a++;
            b++;
            continue;
          }
          cr_assert(fabs(x - y) <= 1e-5 * fabs(x) + 1e-5, "%s %s: %s vs %s", nets[m][0], modes[i], first, arg);
          a = ea;
          b = eb;
        }
      }
      free(out);
    }
    free(first);
  }
}

Test(cli, bench_prints_percentiles_and_memory) {
  char *out;
  int rc = sh(&out, "'%s' run '%s/models/mnist_conv_bn_etienne' --input '%s/models/mnist_conv_bn_etienne/refs/input_img.npy' --bench 20 2>&1",
              RILL, SHARED, SHARED);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "latency: 20 runs after 3 warm-up runs: p50 "), "%s", out);
  cr_assert(strstr(out, " p90 ") && strstr(out, " p99 ") && strstr(out, " mean "), "%s", out);
  cr_assert(strstr(out, "memory: temporaries ") && strstr(out, "memory plan on"), "%s", out);
  cr_assert(strstr(out, "passes: 1 dropout/identity removed, 1 batch_norm folded, 2 conv2d_fusion, 1 fc, "), "%s", out);
  cr_assert(strstr(out, " in place, 0 int8\n"), "%s", out);
  cr_assert(strstr(out, "argmax per row: 3\n"), "%s", out);
  free(out);
}

static int count_in(const char *path, const char *needle) {
  size_t n;
  char *text = (char *)slurp_file(path, &n);
  if (!text) return -1;
  text[n] = '\0'; /* slurp_file leaves room for it */
  int count = 0;
  for (const char *q = text; (q = strstr(q, needle)); q++) count++;
  free(text);
  return count;
}

Test(cli, profile_writes_the_trace_of_the_timed_runs_and_prints_the_report) {
  char *out, trace[] = "/tmp/rill_cli_profile_XXXXXX";
  int fd = mkstemp(trace);
  cr_assert(fd >= 0);
  close(fd);
  /* 8 ops a run (the final identity scale is removed): with --bench, only the 5 timed
   * runs (not the first, not the warm-up) */
  int rc = sh(&out, "'%s' run '%s/models/mnist_conv_bn_etienne' --input '%s/models/mnist_conv_bn_etienne/refs/input_img.npy' --bench 5 --profile '%s' 2>&1",
              RILL, SHARED, SHARED, trace);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "Profiling Report") && strstr(out, "Sorted by total time"), "%s", out);
  cr_assert(strstr(out, "conv2d_fusion (block 0, op #1)") && strstr(out, "trace: wrote "), "%s", out);
  free(out);
  cr_expect_eq(count_in(trace, "\"cat\":\"op\""), 5 * 8);
  /* without --bench: the first run and the --repeat runs */
  rc = sh(&out, "'%s' run '%s/models/mnist_conv_bn_etienne' --input '%s/models/mnist_conv_bn_etienne/refs/input_img.npy' --repeat 2 --profile '%s' 2>&1",
          RILL, SHARED, SHARED, trace);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  cr_expect_eq(count_in(trace, "\"cat\":\"op\""), 3 * 8);
  remove(trace);
}

/* -v lists the copies between places; on the CPU there are none, and the output is
 * unchanged. (The copies a device place makes are listed by tests/exec/test_backends.c's
 * profiler rows, which -v prints.) */
Test(cli, run_verbose_lists_the_copies_between_places) {
  char *out;
  int rc = sh(&out, "'%s' run '%s/models/mnist_conv_bn_etienne' --input '%s/models/mnist_conv_bn_etienne/refs/input_img.npy' -v --repeat 1 2>&1",
              RILL, SHARED, SHARED);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "copies between places: none (2 runs)"), "%s", out);
  cr_assert(strstr(out, "argmax per row: 3"), "%s", out);
  cr_assert_null(strstr(out, "Profiling Report"), "-v alone prints no profile: %s", out);
  free(out);
}

Test(cli, trace_summary_draws_bars_and_merge_aligns_two_processes) {
  char *out, a[] = "/tmp/rill_cli_trace_a_XXXXXX", b[] = "/tmp/rill_cli_trace_b_XXXXXX",
             all[] = "/tmp/rill_cli_trace_all_XXXXXX", svg[] = "/tmp/rill_cli_trace_svg_XXXXXX";
  char *files[] = {a, b, all, svg};
  for (int i = 0; i < 4; i++) {
    int fd = mkstemp(files[i]);
    cr_assert(fd >= 0);
    close(fd);
  }
  int rc = sh(&out, "'%s' run '%s/models/mnist_conv_bn_etienne' --input '%s/models/mnist_conv_bn_etienne/refs/input_img.npy' --profile '%s' >/dev/null 2>&1 && "
                    "'%s' run '%s/models/mnist_conv_bn_etienne' --input '%s/models/mnist_conv_bn_etienne/refs/input_img.npy' --repeat 1 --profile '%s' >/dev/null 2>&1 && "
                    "'%s' trace summary '%s' --svg '%s' 2>&1",
              RILL, SHARED, SHARED, a, RILL, SHARED, SHARED, b, RILL, b, svg);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "conv2d_fusion                   4 "), "%s", out); /* 2 runs, 2 convs */
  free(out);
  cr_expect_eq(count_in(svg, "<rect "), 6); /* one bar per op type */
  rc = sh(&out, "'%s' trace merge '%s' '%s' -o '%s' 2>&1", RILL, a, b, all);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  cr_expect_eq(count_in(all, "\"cat\":\"op\""), 8 + 2 * 8);
  cr_expect_eq(count_in(all, "\"process_name\""), 2);
  cr_expect_eq(count_in(all, "\"shift_us\":0.000"), 1); /* the first process starts at 0 */
  rc = sh(&out, "'%s' trace summary /nonexistent.json 2>&1", RILL);
  cr_expect_eq(rc, 1, "%s", out);
  cr_expect(strstr(out, "/nonexistent.json"), "%s", out);
  free(out);
  rc = sh(&out, "'%s' trace merge '%s' 2>&1", RILL, a);
  cr_expect_eq(rc, 2, "%s", out);
  free(out);
  for (int i = 0; i < 4; i++) remove(files[i]);
}

Test(cli, unsupported_ops_are_named) {
  char *out, path[] = "/tmp/rill_cli_unsupported_XXXXXX";
  write_unsupported_program(path);
  int rc = sh(&out, "'%s' run '%s' 2>&1", RILL, path);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "var_conv_2d"), "%s", out);
  cr_assert(strstr(out, "--plugin"), "the message says how to add them: %s", out);
  free(out);
  remove(path);
}

Test(cli, bad_input_is_a_runtime_error) {
  char *out;
  int rc = sh(&out, "'%s' run '%s/models/fit_a_line_raftliu' --input x=/nonexistent.npy 2>&1", RILL, SHARED);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "nonexistent.npy"), "%s", out);
  free(out);
  rc = sh(&out, "'%s' run '%s/models/fit_a_line_raftliu' --input y='%s/models/fit_a_line_raftliu/refs/input_x.npy' 2>&1",
          RILL, SHARED, SHARED);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "'y'") || strstr(out, "'x'"), "%s", out);
  free(out);
}

Test(cli, bad_arguments_exit_2) {
  const char *const cases[] = {"", "frobnicate", "inspect", "inspect a b", "run",
                               "run --input", "run m --bogus", "ops a b",
                               "run m --repeat 0", "run m --repeat x", "run m --threads 0",
                               "run m --threads", "run m --sequential --parallel",
                               "run m -O 3", "run m -O", "run m -O12", "run m -Ox",
                               "run m --bench 0", "run m --bench"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out;
    int rc = sh(&out, "'%s' %s 2>&1", RILL, cases[i]);
    cr_assert_eq(rc, 2, "'rill %s' exited %d:\n%s", cases[i], rc, out);
    free(out);
  }
}

Test(cli, help_version_and_ops) {
  char *out;
  cr_assert_eq(sh(&out, "'%s' --help", RILL), 0);
  cr_assert(strstr(out, "usage: rill"));
  free(out);
  cr_assert_eq(sh(&out, "'%s' --version", RILL), 0);
  cr_assert(strstr(out, "rill 0."));
  free(out);
  cr_assert_eq(sh(&out, "'%s' ops", RILL), 0);
  char *a = strstr(out, "\nelementwise_add"), *b = strstr(out, "\nmul"), *c = strstr(out, "\nsoftmax");
  cr_assert(a && b && c && a < b && b < c, "ops are listed sorted:\n%s", out);
  free(out);
  cr_assert_eq(sh(&out, "'%s' ops mul", RILL), 0);
  cr_assert(strstr(out, "x_num_col_dims"), "%s", out);
  free(out);
  cr_assert_eq(sh(&out, "'%s' ops no_such_op 2>&1", RILL), 1);
  cr_assert(strstr(out, "no_such_op"), "%s", out);
  free(out);
}

Test(cli, demo_round_trips_through_a_model_dir) {
  char dir[] = "/tmp/rill_demo_XXXXXX", *out;
  cr_assert_not_null(mkdtemp(dir));
  int rc = sh(&out, "'%s/rill_demo' '%s/model' 2>&1", RILL_BINARY_DIR, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "the answers MATCH"), "%s", out);
  free(out);
  /* The saved directory is a model the CLI can inspect. */
  rc = sh(&out, "'%s' inspect '%s/model' 2>&1 && rm -rf '%s'", RILL, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "col 0: x float32 [-1, 4]"), "%s", out);
  free(out);
}

Test(cli, inspect_reads_every_shared_program) {
  DIR *d = opendir(SHARED "/programs");
  cr_assert_not_null(d);
  struct dirent *e;
  int seen = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char *out;
    int rc = sh(&out, "'%s' inspect '%s/programs/%s' 2>&1", RILL, SHARED, e->d_name);
    cr_assert_eq(rc, 0, "%s: exit %d\n%.2000s", e->d_name, rc, out);
    cr_assert(strstr(out, "feed targets (") && strstr(out, "fetch targets ("), "%s", e->d_name);
    free(out);
    seen++;
  }
  closedir(d);
  cr_assert_geq(seen, 30);
}

/* --lod gives word2vec's four int64 feeds their one-word sequences (Paddle 1.6.3 fed
 * them as LoD tensors); the answer is the reference's. */
Test(cli, run_word2vec_with_lod_inputs) {
  char *out, cmd[4096] = "";
  const char *feeds[] = {"firstw", "secondw", "thirdw", "fourthw"};
  size_t n = 0;
  for (int i = 0; i < 4; i++)
    n += (size_t)snprintf(cmd + n, sizeof cmd - n, " --input %s='%s/models/pureboys_word2vec/refs/input_%s.npy' --lod %s=0,1",
                          feeds[i], SHARED, feeds[i], feeds[i]);
  int rc = sh(&out, "'%s' run '%s/models/pureboys_word2vec'%s 2>&1", RILL, SHARED, cmd);
  cr_assert_eq(rc, 0, "%s", out);
  /* printed to 6 digits: the fused fc may round the last one either way */
  cr_assert(strstr(out, "first: 0.045777") && strstr(out, " 0.0331917 0.0383345"), "%s", out);
  cr_assert(strstr(out, "argmax per row: 0"), "%s", out);
  free(out);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  cr_assert_eq(fwrite(data, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

static void add_op(rill_program *p, const char *type, const char *in_slot, const char *in,
                   const char *out_slot, const char *out, bool col) {
  rill_op_builder *b;
  cr_assert_null(rill_op_builder_create(type, &b));
  cr_assert_null(rill_op_builder_input(b, in_slot, &in, 1));
  cr_assert_null(rill_op_builder_output(b, out_slot, &out, 1));
  if (col) cr_assert_null(rill_op_builder_attr_int(b, "col", 0));
  if (!col) cr_assert_null(rill_op_builder_attr_string(b, "pooltype", "SUM"));
  cr_assert_null(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* A model dir whose program is feed -> sequence_pool(SUM) -> fetch, and x.npy [5, 2]. */
static void make_pool_model(const char *dir) {
  rill_program *p;
  cr_assert_null(rill_program_create(&p));
  const int64_t xd[] = {-1, 2};
  cr_assert_null(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  cr_assert_null(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  cr_assert_null(rill_block_add_var(p, 0, "words", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 1, false));
  cr_assert_null(rill_block_add_var(p, 0, "pooled", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  add_op(p, "feed", "X", "feed", "Out", "words", true);
  add_op(p, "sequence_pool", "X", "words", "Out", "pooled", false);
  add_op(p, "fetch", "X", "pooled", "Out", "fetch", true);
  void *bytes;
  size_t nbytes;
  cr_assert_null(rill_program_serialize(p, &bytes, &nbytes));
  char path[1024];
  snprintf(path, sizeof path, "%s/__model__", dir);
  write_file(path, bytes, nbytes);
  rill_free_buffer(bytes);
  rill_program_destroy(p);
  const int64_t dims[] = {5, 2};
  rill_tensor *x;
  cr_assert_null(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x));
  float *v = rill_tensor_data(x);
  for (int i = 0; i < 10; i++) v[i] = (float)(i + 1);
  snprintf(path, sizeof path, "%s/x.npy", dir);
  cr_assert_null(rill_npy_save(path, x));
  rill_tensor_destroy(x);
}

/* The LoD set by --lod reaches the op: sequences [0, 2) and [2, 5) of
 * [[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]] sum to [4, 6] and [21, 24]; a two-level LoD
 * pools the last level. */
Test(cli, run_sequence_pool_with_lod) {
  char dir[] = "/tmp/rill_lod_XXXXXX", *out;
  cr_assert_not_null(mkdtemp(dir));
  make_pool_model(dir);
  int rc = sh(&out, "'%s' run '%s' --input words='%s/x.npy' --lod words=0,2,5 2>&1", RILL, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "output 0: pooled float32 [2, 2]"), "%s", out);
  cr_assert(strstr(out, "first: 4 6 21 24"), "%s", out);
  free(out);
  rc = sh(&out, "'%s' run '%s' --input words='%s/x.npy' --lod 'words=0,1,2;0,1,5' 2>&1", RILL, dir, dir);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "first: 1 2 24 28"), "%s", out);
  free(out);
  /* without a LoD the op says what it needs */
  rc = sh(&out, "'%s' run '%s' --input words='%s/x.npy' 2>&1", RILL, dir, dir);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "sequence_pool") && strstr(out, "words") && strstr(out, "LoD"), "%s", out);
  free(out);
  /* offsets that do not fit the tensor: a runtime error naming the input and the rule */
  const char *bad[] = {"words=0,2,6", "words=1,5", "words=0,3,2,5", "'words=0,1;0,2,5'"};
  const char *why[] = {"ends at 6 but the tensor has 5", "start with offset 0", "decreases",
                       "ends at 1 but the next level has 2"};
  for (int i = 0; i < 4; i++) {
    rc = sh(&out, "'%s' run '%s' --input words='%s/x.npy' --lod %s 2>&1", RILL, dir, dir, bad[i]);
    cr_assert_eq(rc, 1, "%s: %s", bad[i], out);
    cr_assert(strstr(out, "'words'") && strstr(out, why[i]), "%s: %s", bad[i], out);
    free(out);
  }
  rc = sh(&out, "rm -rf '%s'", dir);
  free(out);
}

Test(cli, malformed_lod_is_a_usage_error) {
  const char *const cases[] = {"--lod", "--lod x", "--lod =0,1", "--lod x=", "--lod x=0,,2",
                               "--lod x=0,-1", "--lod 'x=0,1;'", "--lod x=0,a",
                               "--lod x=99999999999999999999", "--lod x=0,1 --lod x=0,1"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out;
    int rc = sh(&out, "'%s' run m %s 2>&1", RILL, cases[i]);
    cr_assert_eq(rc, 2, "'rill run m %s' exited %d:\n%s", cases[i], rc, out);
    cr_assert(strstr(out, "--lod"), "%s", out);
    free(out);
  }
  /* a well-formed --lod for an input the run does not have */
  char *out;
  int rc = sh(&out, "'%s' run '%s/models/fit_a_line_raftliu' --input x='%s/models/fit_a_line_raftliu/refs/input_x.npy' --lod y=0,1 2>&1",
              RILL, SHARED, SHARED);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "--lod y") && strstr(out, "no --input"), "%s", out);
  free(out);
}

/* `rill dot` on one program file: dot accepts the output, and every op type of every
 * block appears as a node label. */
static void check_dot(const char *program_file, const char *model_arg) {
  char *out;
  int rc = sh(&out, "'%s' dot '%s' 2>&1", RILL, model_arg);
  cr_assert_eq(rc, 0, "%s: exit %d\n%.2000s", model_arg, rc, out);
  rill_program *p;
  rill_status *st = rill_program_load(program_file, &p);
  cr_assert_null(st, "%s: %s", program_file, rill_status_message(st));
  for (size_t b = 0; b < p->nblocks; b++)
    for (size_t i = 0; i < p->blocks[b].nops; i++) {
      char want[300];
      snprintf(want, sizeof want, "op%zu_%zu [shape=", b, i);
      char *at = strstr(out, want);
      cr_assert(at, "%s: no node for op #%zu of block %zu", model_arg, i, b);
      snprintf(want, sizeof want, "label=\"%s\\n", p->blocks[b].ops[i].type);
      char *eol = strchr(at, '\n');
      char *lab = strstr(at, want);
      cr_assert(lab && (!eol || lab < eol), "%s: op #%zu of block %zu is not labelled %s",
                model_arg, i, b, p->blocks[b].ops[i].type);
    }
  rill_program_destroy(p);
  free(out);
  rc = sh(&out, "'%s' dot '%s' | dot -Tsvg -o /dev/null 2>&1", RILL, model_arg);
  cr_assert_eq(rc, 0, "%s: dot -Tsvg refused the graph: %.2000s", model_arg, out);
  free(out);
}

static bool have_graphviz(void) {
  return system("command -v dot >/dev/null 2>&1") == 0;
}

Test(cli, dot_of_every_shared_model_renders_and_names_every_op) {
  if (!have_graphviz()) cr_skip_test("Graphviz's dot is not installed (scripts/install-deps.sh)");
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char dir[1024], file[1100];
    snprintf(dir, sizeof dir, "%s/models/%s", SHARED, models[i]);
    snprintf(file, sizeof file, "%s/__model__", dir);
    if (access(file, R_OK) != 0) snprintf(file, sizeof file, "%s/model.pdmodel", dir);
    check_dot(file, dir);
  }
}

Test(cli, dot_of_every_shared_program_renders_and_names_every_op) {
  if (!have_graphviz()) cr_skip_test("Graphviz's dot is not installed (scripts/install-deps.sh)");
  DIR *d = opendir(SHARED "/programs");
  cr_assert_not_null(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char file[1024];
    snprintf(file, sizeof file, "%s/programs/%s", SHARED, e->d_name);
    check_dot(file, file);
  }
  closedir(d);
}

Test(cli, dot_writes_a_file_and_marks_parameters_feeds_fetches_and_clusters) {
  char path[] = "/tmp/rill_dot_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  char *out;
  int rc = sh(&out, "'%s' dot '%s/programs/fsie_table.pdmodel' -o '%s' 2>&1", RILL, SHARED, path);
  cr_assert_eq(rc, 0, "%s", out);
  free(out);
  rc = sh(&out, "cat '%s'", path);
  cr_assert_eq(rc, 0);
  cr_assert(strstr(out, "subgraph cluster_b1 {"), "the while body is a cluster");
  cr_assert(strstr(out, "lhead=cluster_b1"), "the while op points at its block");
  cr_assert(strstr(out, "fillcolor=gray85"), "parameters are filled");
  cr_assert(strstr(out, "shape=invhouse") && strstr(out, "shape=house"), "feed and fetch");
  cr_assert(strstr(out, "float32 ["), "shapes on the edges");
  free(out);
  unlink(path);
  rc = sh(&out, "'%s' dot 2>&1", RILL);
  cr_assert_eq(rc, 2, "no MODEL is a usage error: %s", out);
  free(out);
  rc = sh(&out, "'%s' dot /nonexistent/model 2>&1", RILL);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert(strstr(out, "/nonexistent/model"), "%s", out);
  free(out);
}

/* Names come from files: quotes, backslashes, newlines and braces in variable names and
 * op types still give a graph dot accepts, with each name escaped. */
Test(cli, dot_escapes_names_from_files) {
  if (!have_graphviz()) cr_skip_test("Graphviz's dot is not installed (scripts/install-deps.sh)");
  rill_program *p;
  cr_assert_null(rill_program_create(&p));
  const char *names[] = {"a\"b", "c\\d", "new\nline", "}{;"};
  const int64_t dims[] = {2};
  for (int i = 0; i < 4; i++)
    cr_assert_null(rill_block_add_var(p, 0, names[i], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims,
                                      1, 0, i == 3));
  rill_op_builder *b;
  cr_assert_null(rill_op_builder_create("we\"ird\\op", &b));
  cr_assert_null(rill_op_builder_input(b, "X\"", &names[0], 1));
  cr_assert_null(rill_op_builder_input(b, "Y", &names[3], 1));
  cr_assert_null(rill_op_builder_output(b, "Out", &names[1], 1));
  cr_assert_null(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  void *bytes;
  size_t size;
  cr_assert_null(rill_program_serialize(p, &bytes, &size));
  char path[] = "/tmp/rill_dot_names_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, bytes, size), (ssize_t)size);
  close(fd);
  rill_free_buffer(bytes);
  rill_program_destroy(p);
  char *out;
  int rc = sh(&out, "'%s' dot '%s' 2>&1", RILL, path);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "label=\"a\\\"b\""), "quote escaped: %s", out);
  cr_assert(strstr(out, "label=\"c\\\\d\""), "backslash escaped: %s", out);
  cr_assert(strstr(out, "we\\\"ird\\\\op"), "op type escaped: %s", out);
  free(out);
  rc = sh(&out, "'%s' dot '%s' | dot -Tsvg -o /dev/null 2>&1", RILL, path);
  cr_assert_eq(rc, 0, "dot refused: %s", out);
  free(out);
  unlink(path);
}

/* --int8: a saved model with a conv between a fake quantize op and its dequantizer
 * (weights integer levels) runs with the INT8 pass: the --bench report counts one int8
 * rewrite where the CPU runs AVX2 (none below, where the predictor keeps the float
 * simulation), and the output is the one printed without --int8. */
Test(cli, int8_switch_takes_the_int8_pass) {
  POK(rill_registry_init());
  char dir[] = "/tmp/rill_cli_int8_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  rill_program *p = prog_new();
  rill_scope *params = NULL;
  POK(rill_scope_create(NULL, &params));
  POK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  POK(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  prog_var(p, "x", RILL_DTYPE_FP32, "", 4, (int64_t)-1, 3, 6, 6);
  prog_var(p, "xq", RILL_DTYPE_FP32, "", 4, (int64_t)-1, 3, 6, 6);
  prog_var(p, "xs", RILL_DTYPE_FP32, "", 1, 1);
  prog_var(p, "y", RILL_DTYPE_FP32, "", 4, (int64_t)-1, 4, 6, 6);
  prog_var(p, "z", RILL_DTYPE_FP32, "", 4, (int64_t)-1, 4, 6, 6);
  prog_var(p, "w", RILL_DTYPE_FP32, "p", 4, 4, 3, 3, 3);
  rill_tensor *w = NULL;
  POK(rill_tensor_create(RILL_DTYPE_FP32, (const int64_t[]){4, 3, 3, 3}, 4, &w));
  float *wd = rill_tensor_data(w);
  for (int i = 0; i < 108; i++) wd[i] = (float)((i * 37) % 255 - 127);
  scope_bind(params, "w", w);
  rill_op_builder *b = prog_op_begin("feed", "X=feed", "Out=x");
  POK(rill_op_builder_attr_int(b, "col", 0));
  prog_op_end(b, p);
  b = prog_op_begin("fake_quantize_abs_max", "X=x", "Out=xq;OutScale=xs");
  POK(rill_op_builder_attr_int(b, "bit_length", 8));
  prog_op_end(b, p);
  b = prog_op_begin("conv2d", "Input=xq;Filter=w", "Output=y");
  POK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 1}, 2));
  prog_op_end(b, p);
  b = prog_op_begin("fake_dequantize_max_abs", "X=y;Scale=xs", "Out=z");
  POK(rill_op_builder_attr_float(b, "max_range", 16129.0f));
  prog_op_end(b, p);
  b = prog_op_begin("fetch", "X=z", "Out=fetch");
  POK(rill_op_builder_attr_int(b, "col", 0));
  prog_op_end(b, p);
  char model[256], npy[256];
  snprintf(model, sizeof model, "%s/__model__", dir);
  POK(rill_program_save(p, model));
  const char *names[] = {"w"};
  POK(rill_program_save_vars(p, params, dir, names, 1, NULL));
  float xv[108];
  for (int i = 0; i < 108; i++) xv[i] = (float)((i * 29) % 61) / 20.0f - 1.5f;
  rill_tensor *x = wrap(RILL_DTYPE_FP32, xv, 4, 1, 3, 6, 6);
  snprintf(npy, sizeof npy, "%s/x.npy", dir);
  POK(rill_tensor_save_npy(x, npy));
  rill_tensor_destroy(x);
  char *outs[2];
  for (int k = 0; k < 2; k++) {
    int rc = sh(&outs[k], "'%s' run '%s' --input '%s' --bench 2 %s 2>&1", RILL, dir, npy, k ? "--int8" : "");
    cr_assert_eq(rc, 0, "%s", outs[k]);
  }
  bool avx2 = strstr(rill_cpu_isa(), "avx") != NULL;
  cr_assert(strstr(outs[0], " in place, 0 int8\n"), "%s", outs[0]);
  cr_assert(strstr(outs[1], avx2 ? " in place, 1 int8\n" : " in place, 0 int8\n"), "%s", outs[1]);
  /* the printed values (up to the timing lines) are the same */
  char *a = strstr(outs[0], "first:"), *c = strstr(outs[1], "first:");
  cr_assert(a && c, "%s", outs[0]);
  char *ea = strchr(a, '\n'), *ec = strchr(c, '\n');
  cr_assert(ea && ec && ea - a == ec - c && strncmp(a, c, (size_t)(ea - a)) == 0, "%s\nvs\n%s", outs[0], outs[1]);
  free(outs[0]);
  free(outs[1]);
  int rc = sh(&outs[0], "'%s' run '%s' --input '%s' --int8 -O 0 2>&1", RILL, dir, npy);
  cr_assert_eq(rc, 0, "--int8 with -O 0: %s", outs[0]);
  free(outs[0]);
  unlink(model);
  unlink(npy);
  snprintf(model, sizeof model, "%s/w", dir);
  unlink(model);
  rmdir(dir);
  rill_scope_destroy(params);
  rill_program_destroy(p);
}
