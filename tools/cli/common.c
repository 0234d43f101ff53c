/* Helpers the commands of the command line share (cli.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "rill: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'rill --help' for usage)\n");
  return EXIT_USAGE;
}

int fail(rill_status *st) {
  fprintf(stderr, "rill: error: %s: %s\n", rill_code_name(rill_status_code(st)),
          rill_status_message(st));
  rill_status_destroy(st);
  return EXIT_ERROR;
}

rill_status *cli_oom(void) { return rill_status_create(RILL_OUT_OF_MEMORY, "out of memory"); }

bool path_is_dir(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool path_is_file(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static char *join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}

rill_status *program_path(const char *model, char **out) {
  if (!path_is_dir(model)) {
    struct stat sb;
    if (stat(model, &sb) != 0)
      return rill_status_create(RILL_NOT_FOUND, "%s: no such file or directory", model);
    *out = strdup(model);
    return *out ? NULL : cli_oom();
  }
  char *p = join(model, "__model__");
  if (!p) return cli_oom();
  if (path_is_file(p)) {
    *out = p;
    return NULL;
  }
  free(p);
  DIR *d = opendir(model);
  if (!d) return rill_status_create(RILL_IO, "%s: cannot open directory: %s", model, strerror(errno));
  char *found = NULL;
  struct dirent *e;
  while ((e = readdir(d)))
    if (has_suffix(e->d_name, ".pdmodel")) {
      char *cand = join(model, e->d_name);
      if (!cand) break;
      if (!found || strcmp(cand, found) < 0) {
        free(found);
        found = cand;
      } else {
        free(cand);
      }
    }
  closedir(d);
  if (!found)
    return rill_status_create(RILL_NOT_FOUND, "%s: the directory has no __model__ or .pdmodel file",
                              model);
  *out = found;
  return NULL;
}

rill_status *load_program(const char *model, rill_program **out, char **path_out) {
  char *path = NULL;
  CLI_TRY(program_path(model, &path));
  rill_status *st = rill_program_load(path, out);
  if (!st && path_out)
    *path_out = path;
  else
    free(path);
  return st;
}

const char *dims_str(const int64_t *dims, size_t ndim, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  len += (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < ndim && len < cap; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

const char *var_type_name(int32_t type) {
  switch (type) {
    case RILL_VAR_LOD_TENSOR: return "LOD_TENSOR";
    case RILL_VAR_SELECTED_ROWS: return "SELECTED_ROWS";
    case RILL_VAR_FEED_MINIBATCH: return "FEED_MINIBATCH";
    case RILL_VAR_FETCH_LIST: return "FETCH_LIST";
    case RILL_VAR_STEP_SCOPES: return "STEP_SCOPES";
    case RILL_VAR_LOD_RANK_TABLE: return "LOD_RANK_TABLE";
    case RILL_VAR_LOD_TENSOR_ARRAY: return "LOD_TENSOR_ARRAY";
    case RILL_VAR_READER: return "READER";
    case RILL_VAR_RAW: return "RAW";
    default: return "OTHER";
  }
}

/* Writes into `path` as it is: for a device or a pipe (-o /dev/stdout, /dev/null, a
 * FIFO), which a temp file renamed over it would replace with a plain file. */
static rill_status *write_into(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return rill_status_create(RILL_IO, "%s: cannot open for writing: %s", path, strerror(errno));
  bool ok = fwrite(data, 1, len, f) == len && fflush(f) == 0;
  int err = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  return ok ? NULL : rill_status_create(RILL_IO, "%s: cannot write: %s", path, strerror(err));
}

rill_status *write_file(const char *path, const void *data, size_t len) {
  /* A regular file (or nothing yet) is replaced crash-safely; through a symbolic link the
   * file it names is, and the link stays. */
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return rill_status_create(RILL_IO, "%s: is a directory", path);
    if (!S_ISREG(sb.st_mode)) return write_into(path, data, len);
    struct stat lsb;
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
      char *target = realpath(path, NULL);
      if (!target)
        return rill_status_create(RILL_IO, "%s: cannot resolve the link: %s", path, strerror(errno));
      rill_status *st = write_file(target, data, len);
      free(target);
      return st;
    }
  }
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  if (!tmp) return cli_oom();
  snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
  rill_status *st = NULL;
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    st = rill_status_create(RILL_IO, "%s: cannot create: %s", tmp, strerror(errno));
  } else {
    bool ok = fwrite(data, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = errno;
    if (fclose(f) != 0 && ok) {
      ok = false;
      err = errno;
    }
    if (!ok)
      st = rill_status_create(RILL_IO, "%s: cannot write: %s", tmp, strerror(err));
    else if (rename(tmp, path) != 0)
      st = rill_status_create(RILL_IO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (st) unlink(tmp);
  }
  free(tmp);
  return st;
}
