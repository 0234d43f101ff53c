/* The command line given a named pipe where it reads a file: an error naming the file,
 * at once (opening a pipe for reading waits for a writer; `timeout` and the test's own
 * timeout fail the test instead of hanging it). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "framework/io/checkpoint.h"
#include "framework/io/file.h"
#include "rill.h"

#define RILL RILL_BINARY_DIR "/rill"
#define SHARED RILL_SHARED_DIR

static char dir[256];

static void make_dir(void) {
  snprintf(dir, sizeof dir, "%s/cli_pipes_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(dir));
}

static void drop_dir(void) { rill_status_destroy(rill_dir_remove_tree(dir)); }

TestSuite(cli_pipes, .init = make_dir, .fini = drop_dir);

/* Runs `rill ARGS` under `timeout 20`; returns the exit status (124: it hung) and the
 * output (stdout + stderr). */
static int rill(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rill(char **out, const char *fmt, ...) {
  char args[2048], cmd[2600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "timeout 20 '%s' %s 2>&1 </dev/null", RILL, args);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f, "popen %s", cmd);
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) n += got;
  buf[n] = 0;
  int status = pclose(f);
  *out = buf;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void pipe_at(char *path, size_t n, const char *name) {
  snprintf(path, n, "%s/%s", dir, name);
  cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo %s", path);
}

Test(cli_pipes, run_refuses_a_pipe_as_input_or_params, .timeout = 120) {
  char pipe[400], *out;
  pipe_at(pipe, sizeof pipe, "x.npy");
  int rc = rill(&out, "run '%s/models/fit_a_line_raftliu' --input x='%s'", SHARED, pipe);
  cr_assert_eq(rc, 1, "exit %d (124: hung)\n%s", rc, out);
  cr_assert(strstr(out, pipe) && strstr(out, "not a regular file (it is a named pipe)"), "%s", out);
  free(out);
  pipe_at(pipe, sizeof pipe, "params");
  rc = rill(&out, "run '%s/models/paddlelite_simple_model/model.pdmodel' --params '%s' --input x='%s/models/fit_a_line_raftliu/refs/input_x.npy'",
            SHARED, pipe, SHARED);
  cr_assert_eq(rc, 1, "exit %d (124: hung)\n%s", rc, out);
  cr_assert(strstr(out, pipe) && strstr(out, "named pipe"), "%s", out);
  free(out);
  pipe_at(pipe, sizeof pipe, "prog.pdmodel");
  rc = rill(&out, "inspect '%s'", pipe);
  cr_assert_neq(rc, 0, "%s", out);
  cr_assert_neq(rc, 124, "hung\n%s", out);
  cr_assert(strstr(out, pipe), "%s", out);
  free(out);
}

Test(cli_pipes, checkpoint_ls_reports_a_pipe_manifest_as_damaged, .timeout = 60) {
  float w[2] = {1, 2};
  int64_t d = 2;
  rill_tensor *t;
  cr_assert_null(rill_tensor_create_from_data(RILL_DTYPE_FP32, &d, 1, w, sizeof w, NULL, NULL, &t));
  const char *name = "w";
  const rill_tensor *ts[1] = {t};
  for (int64_t step = 1; step <= 2; step++) {
    rill_ckpt_snapshot s;
    rill_ckpt_snapshot_init(&s);
    cr_assert_null(rill_ckpt_snapshot_take(&s, &name, ts, 1, SIZE_MAX));
    s.step = step;
    cr_assert_null(rill_ckpt_write(dir, &s, 0, NULL));
    rill_ckpt_snapshot_clear(&s);
  }
  rill_tensor_destroy(t);
  char manifest[400], *out;
  snprintf(manifest, sizeof manifest, "%s/checkpoint_2/" RILL_CKPT_MANIFEST, dir);
  cr_assert_eq(unlink(manifest), 0);
  cr_assert_eq(mkfifo(manifest, 0600), 0);
  int rc = rill(&out, "checkpoint ls '%s'", dir);
  cr_assert_eq(rc, 0, "exit %d (124: hung)\n%s", rc, out);
  const char *l2 = strstr(out, "\n2 "), *l1 = strstr(out, "\n1 ");
  cr_assert(l2 && l1 && l2 < l1, "%s", out);
  cr_assert(strstr(l2, "damaged: ") && strstr(l2, "named pipe") && strstr(l1, "verified"), "%s", out);
  free(out);
}
