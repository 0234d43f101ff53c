/* Crash-safe writes, whole-file reads and safe joining of variable names. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"
#include "rill.h"

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/io_file_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void assert_content(const char *path, const char *want) {
  uint8_t *data;
  size_t size;
  rill_status *st = rill_file_read_all(path, 1 << 20, &data, &size);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_eq(size, strlen(want));
  cr_assert_eq(memcmp(data, want, size), 0);
  cr_assert_eq(data[size], 0);
  rill_free(data);
}

TestSuite(file, .init = make_tmpdir);

Test(file, write_then_read) {
  char path[400];
  snprintf(path, sizeof path, "%s/a", tmpdir);
  rill_file_part parts[3] = {{"hello ", 6}, {NULL, 0}, {"world", 5}};
  cr_assert_null(rill_file_write_parts(path, parts, 3));
  assert_content(path, "hello world");
  cr_assert_null(rill_file_write(path, "second", 6));
  assert_content(path, "second");
  cr_assert_eq(count_entries(tmpdir), 1); /* no temp file left */
  remove_tree(tmpdir);
}

Test(file, failed_write_keeps_old_file_and_removes_temp) {
  char path[400];
  snprintf(path, sizeof path, "%s/params", tmpdir);
  cr_assert_null(rill_file_write(path, "old", 3));
  for (int f = RILL_FILE_FAULT_OPEN; f < RILL_FILE_FAULT_COUNT; f++) {
    rill_file_inject_fault((rill_file_fault)f);
    rill_status *st = rill_file_write(path, "new content", 11);
    cr_assert_not_null(st, "fault %d did not fail the write", f);
    cr_assert_eq(rill_status_code(st), RILL_IO);
    cr_assert(strstr(rill_status_message(st), path), "%s", rill_status_message(st));
    rill_status_destroy(st);
    assert_content(path, "old");
    cr_assert_eq(count_entries(tmpdir), 1, "fault %d left a temp file", f);
  }
  cr_assert_null(rill_file_write(path, "new", 3)); /* the hook fires once */
  assert_content(path, "new");
  remove_tree(tmpdir);
}

Test(file, rename_over_a_directory_fails_cleanly) {
  char path[400], inner[450];
  snprintf(path, sizeof path, "%s/d", tmpdir);
  cr_assert_eq(mkdir(path, 0755), 0);
  snprintf(inner, sizeof inner, "%s/keep", path);
  cr_assert_null(rill_file_write(inner, "x", 1));
  rill_status *st = rill_file_write(path, "data", 4);
  cr_assert_not_null(st);
  rill_status_destroy(st);
  cr_assert(rill_path_is_dir(path));
  assert_content(inner, "x");
  cr_assert_eq(count_entries(tmpdir), 1);
  remove_tree(tmpdir);
}

Test(file, write_into_missing_directory_fails) {
  char path[400];
  snprintf(path, sizeof path, "%s/no/such/file", tmpdir);
  rill_status *st = rill_file_write(path, "x", 1);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "no/such/file"));
  rill_status_destroy(st);
  remove_tree(tmpdir);
}

Test(file, read_checks_size_and_type) {
  char path[400];
  snprintf(path, sizeof path, "%s/big", tmpdir);
  cr_assert_null(rill_file_write(path, "0123456789", 10));
  uint8_t *data = NULL;
  size_t size = 0;
  rill_status *st = rill_file_read_all(path, 9, &data, &size);
  cr_assert_eq(rill_status_code(st), RILL_OUT_OF_RANGE);
  cr_assert_null(data);
  rill_status_destroy(st);
  st = rill_file_read_all(tmpdir, 100, &data, &size);
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  snprintf(path, sizeof path, "%s/missing", tmpdir);
  st = rill_file_read_all(path, 100, &data, &size);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_assert(strstr(rill_status_message(st), "missing"));
  rill_status_destroy(st);
  remove_tree(tmpdir);
}

static void assert_refused(rill_status *st, rill_code code, const char *path) {
  cr_assert_not_null(st, "'%s' was accepted", path);
  cr_assert_eq(rill_status_code(st), code, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), path) && strstr(rill_status_message(st), "named pipe"),
            "%s", rill_status_message(st));
  rill_status_destroy(st);
}

/* Opening a named pipe for reading waits for a writer: every reader must refuse it
 * before that (the timeout fails the test instead of hanging it). */
Test(file, named_pipes_are_refused_without_blocking, .timeout = 20) {
  char path[400];
  snprintf(path, sizeof path, "%s/pipe", tmpdir);
  cr_assert_eq(mkfifo(path, 0600), 0);
  uint8_t *data = NULL;
  size_t size = 0;
  assert_refused(rill_file_read_all(path, 100, &data, &size), RILL_INVALID_ARGUMENT, path);
  cr_assert_null(data);
  rill_reader r;
  assert_refused(rill_reader_open(&r, path), RILL_INVALID_ARGUMENT, path);
  rill_program *p = NULL;
  assert_refused(rill_program_load(path, &p), RILL_IO, path);
  cr_assert_null(p);
  struct stat sb;
  cr_assert_eq(rill_file_open_regular(path, &sb), -2);
  cr_assert(S_ISFIFO(sb.st_mode));
  /* writing over it in place (a reused checkpoint spare) does not wait for a reader */
  int fd = -1;
  rill_file_part part = {"x", 1};
  rill_status *st = rill_file_write_start(path, &part, 1, true, NULL, &fd);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), path), "%s", rill_status_message(st));
  rill_status_destroy(st);
  /* a regular file opened the same way reads as before, blocking mode restored */
  snprintf(path, sizeof path, "%s/plain", tmpdir);
  cr_assert_null(rill_file_write(path, "abc", 3));
  fd = rill_file_open_regular(path, &sb);
  cr_assert_geq(fd, 0);
  cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  cr_assert_eq(sb.st_size, 3);
  close(fd);
  assert_content(path, "abc");
  remove_tree(tmpdir);
}

static void *drain_pipe(void *arg) {
  char **out = arg;
  int fd = open(out[0], O_RDONLY);
  size_t len = 0;
  static char got[256];
  ssize_t r;
  while (fd >= 0 && len < sizeof got - 1 && (r = read(fd, got + len, sizeof got - 1 - len)) > 0)
    len += (size_t)r;
  got[len] = 0;
  if (fd >= 0) close(fd);
  out[1] = got;
  return NULL;
}

/* A path that names a pipe or a device is written into: a temp file renamed over it
 * would have replaced it (`rill dot -o /dev/null` once turned /dev/null into a plain
 * file). A link is followed and kept. */
Test(file, writes_into_pipes_and_through_links, .timeout = 20) {
  char path[400];
  snprintf(path, sizeof path, "%s/pipe", tmpdir);
  cr_assert_eq(mkfifo(path, 0600), 0);
  char *io[2] = {path, NULL};
  pthread_t reader;
  cr_assert_eq(pthread_create(&reader, NULL, drain_pipe, io), 0);
  rill_file_part parts[2] = {{"through ", 8}, {"the pipe", 8}};
  rill_status *st = rill_file_write_parts(path, parts, 2);
  cr_assert_null(st, "%s", rill_status_message(st));
  pthread_join(reader, NULL);
  cr_assert_str_eq(io[1], "through the pipe");
  struct stat sb;
  cr_assert_eq(lstat(path, &sb), 0);
  cr_assert(S_ISFIFO(sb.st_mode), "the pipe was replaced");
  cr_assert_eq(count_entries(tmpdir), 1); /* no temp file beside it */

  char target[400], link[400];
  snprintf(target, sizeof target, "%s/target", tmpdir);
  snprintf(link, sizeof link, "%s/link", tmpdir);
  cr_assert_null(rill_file_write(target, "old", 3));
  cr_assert_eq(symlink("target", link), 0);
  cr_assert_null(rill_file_write(link, "new", 3));
  cr_assert_eq(lstat(link, &sb), 0);
  cr_assert(S_ISLNK(sb.st_mode), "the link was replaced");
  assert_content(target, "new");
  cr_assert_eq(count_entries(tmpdir), 3);

  st = rill_file_write(tmpdir, "x", 1);
  cr_assert_not_null(st);
  cr_assert(strstr(rill_status_message(st), "directory"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  remove_tree(tmpdir);
}

Test(file, join_keeps_names_inside_the_directory) {
  char *p = NULL;
  cr_assert_null(rill_path_join_var("/m", "fc_0.w_0", &p));
  cr_assert_str_eq(p, "/m/fc_0.w_0");
  rill_free(p);
  cr_assert_null(rill_path_join_var("/m/", "save_infer_model/scale_0", &p));
  cr_assert_str_eq(p, "/m/save_infer_model/scale_0");
  rill_free(p);
  cr_assert_null(rill_path_join_var("m", "..a/b..", &p)); /* dots inside names are fine */
  cr_assert_str_eq(p, "m/..a/b..");
  rill_free(p);
  const char *bad[] = {"..", "../x", "a/../../b", "a/..", "/etc/passwd", "", ".", "./a",
                       "a//b", "a/", "a/./b"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    p = NULL;
    rill_status *st = rill_path_join_var("/m", bad[i], &p);
    cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "'%s' accepted", bad[i]);
    cr_assert_null(p);
    rill_status_destroy(st);
  }
  char *d = rill_path_dirname("a/b/c");
  cr_assert_str_eq(d, "a/b");
  rill_free(d);
  d = rill_path_dirname("c");
  cr_assert_str_eq(d, ".");
  rill_free(d);
}

/* rill_path_resolve: links and ".." resolved where the path exists, the rest appended;
 * rill_path_under compares whole components. */
Test(file, resolve_follows_links_and_keeps_missing_parts) {
  char *real = NULL, path[600], link[600], *got = NULL;
  cr_assert_null(rill_path_resolve(tmpdir, &real));
  cr_assert_eq(real[0], '/');
  snprintf(path, sizeof path, "%s/a", tmpdir);
  cr_assert_eq(mkdir(path, 0777), 0);
  snprintf(link, sizeof link, "%s/to_a", tmpdir);
  cr_assert_eq(symlink(path, link), 0);
  char want[700];
  snprintf(want, sizeof want, "%s/a/new/file", real);
  /* Through the link, a ".." inside what exists, "." and doubled slashes. */
  snprintf(path, sizeof path, "%s/to_a/../a//./new/./file", tmpdir);
  rill_status *st = rill_path_resolve(path, &got);
  cr_assert_null(st, "%s", rill_status_message(st));
  cr_assert_str_eq(got, want);
  cr_assert(rill_path_under(real, got));
  rill_free(got);
  /* Relative paths start at the working directory. */
  char cwd[512];
  cr_assert_not_null(getcwd(cwd, sizeof cwd));
  cr_assert_eq(chdir(tmpdir), 0);
  cr_assert_null(rill_path_resolve("to_a/new", &got));
  cr_assert_eq(chdir(cwd), 0);
  snprintf(want, sizeof want, "%s/a/new", real);
  cr_assert_str_eq(got, want);
  rill_free(got);
  /* Refused: ".." after a missing part, a link to nothing, the empty path. */
  snprintf(path, sizeof path, "%s/missing/../a", tmpdir);
  st = rill_path_resolve(path, &got);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  cr_assert(strstr(rill_status_message(st), "'..' after"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  snprintf(link, sizeof link, "%s/dangling", tmpdir);
  cr_assert_eq(symlink("/nonexistent/rill/target", link), 0);
  st = rill_path_resolve(link, &got);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  cr_assert(strstr(rill_status_message(st), "symbolic link to nothing"), "%s",
            rill_status_message(st));
  rill_status_destroy(st);
  st = rill_path_resolve("", &got);
  cr_assert_eq(rill_status_code(st), RILL_FAILED_PRECONDITION);
  rill_status_destroy(st);
  /* Whole components only. */
  cr_assert(rill_path_under("/a/b", "/a/b"));
  cr_assert(rill_path_under("/a/b", "/a/b/c"));
  cr_assert_not(rill_path_under("/a/b", "/a/bc"));
  cr_assert_not(rill_path_under("/a/b", "/a"));
  cr_assert(rill_path_under("/", "/x"));
  rill_free(real);
  remove_tree(tmpdir);
}
