#define _GNU_SOURCE /* sync_file_range */
#include "framework/io/file.h"

#include "framework/io/crc32c.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/base/alloc.h"

static atomic_int armed_fault = RILL_FILE_FAULT_NONE;
static atomic_long fault_countdown;

void rill_file_inject_fault(rill_file_fault fault) { rill_file_inject_fault_at(fault, 1); }

void rill_file_inject_fault_at(rill_file_fault fault, long nth) {
  atomic_store(&fault_countdown, nth < 1 ? 1 : nth);
  atomic_store(&armed_fault, (int)fault);
}

/* True (and disarmed) when the test hook wants this occurrence of `step` to fail. */
static bool fault_at(rill_file_fault step) {
  if (atomic_load_explicit(&armed_fault, memory_order_relaxed) != (int)step) return false;
  if (atomic_fetch_sub(&fault_countdown, 1) != 1) return false;
  int want = (int)step;
  return atomic_compare_exchange_strong(&armed_fault, &want, RILL_FILE_FAULT_NONE);
}

bool rill_path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

bool rill_path_is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool rill_path_is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int rill_file_open_regular(const char *path, struct stat *sb) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  if (fstat(fd, sb) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (!S_ISREG(sb->st_mode)) {
    close(fd);
    return -2;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

const char *rill_file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "of an unknown type";
}

rill_status *rill_file_read_all(const char *path, size_t max_size, uint8_t **data, size_t *size) {
  struct stat sb;
  int fd = rill_file_open_regular(path, &sb);
  if (fd == -2)
    return rill_error(RILL_INVALID_ARGUMENT, "'%s' is not a regular file (it is %s)", path,
                      rill_file_kind(sb.st_mode));
  if (fd < 0) {
    int e = errno;
    return rill_error(e == ENOENT ? RILL_NOT_FOUND : RILL_IO, "cannot open '%s': %s", path,
                      strerror(e));
  }
  rill_status *st = NULL;
  uint8_t *buf = NULL;
  if (sb.st_size < 0 || (uint64_t)sb.st_size > (uint64_t)max_size ||
      (uint64_t)sb.st_size >= (uint64_t)SIZE_MAX) {
    st = rill_error(RILL_OUT_OF_RANGE, "'%s' is too large (%lld bytes, at most %zu)", path,
                    (long long)sb.st_size, max_size);
    goto done;
  }
  size_t n = (size_t)sb.st_size;
  buf = rill_malloc(n + 1);
  if (!buf) {
    st = rill_error(RILL_OUT_OF_MEMORY, "out of memory reading '%s' (%zu bytes)", path, n);
    goto done;
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      st = rill_error(RILL_IO, "cannot read '%s': %s", path, strerror(errno));
      goto done;
    }
    if (r == 0) {
      st = rill_error(RILL_IO, "'%s' shrank while being read (%zu of %zu bytes)", path, got, n);
      goto done;
    }
    got += (size_t)r;
  }
  buf[n] = 0;
  *data = buf;
  *size = n;
  buf = NULL;
done:
  rill_free(buf);
  close(fd);
  return st;
}

char *rill_path_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return rill_strdup(".");
  if (slash == path) return rill_strdup("/");
  return rill_strndup(path, (size_t)(slash - path));
}

/* realpath(3) of `probe` copied into rill's allocator; NULL with errno set on failure. */
static char *real_path(const char *probe) {
  char *r = realpath(probe, NULL);
  if (!r) return NULL;
  char *copy = rill_strdup(r);
  free(r);
  if (!copy) errno = ENOMEM;
  return copy;
}

rill_status *rill_path_resolve(const char *path, char **out) {
  if (!path || !*path) return rill_error(RILL_FAILED_PRECONDITION, "empty path");
  char *abs = NULL;
  if (path[0] == '/') {
    abs = rill_strdup(path);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
      return rill_error(RILL_IO, "'%s': cannot get the working directory: %s", path, strerror(errno));
    abs = rill_malloc(strlen(cwd) + strlen(path) + 2);
    if (abs) sprintf(abs, "%s/%s", cwd, path);
  }
  if (!abs) return rill_oom();
  /* Shorten from the end until what is left exists. */
  size_t cut = strlen(abs);
  char *real = NULL;
  rill_status *st = NULL;
  for (;;) {
    char kept = abs[cut];
    abs[cut] = 0;
    const char *probe = cut ? abs : "/";
    real = real_path(probe);
    int err = errno;
    struct stat sb;
    bool exists = !real && lstat(probe, &sb) == 0;
    if (!real && (exists || (err != ENOENT && err != ENOTDIR)))
      st = err == ENOMEM ? rill_oom()
                         : rill_error(RILL_FAILED_PRECONDITION, "'%s': cannot resolve '%s': %s", path,
                                      probe, exists && err == ENOENT ? "a symbolic link to nothing"
                                                                     : strerror(err));
    abs[cut] = kept;
    if (real || st) break;
    if (cut == 0) {
      st = rill_error(RILL_FAILED_PRECONDITION, "'%s': cannot resolve '/'", path);
      break;
    }
    while (cut > 0 && abs[cut - 1] != '/') cut--;
    if (cut > 0) cut--;
  }
  if (st) {
    rill_free(abs);
    return st;
  }
  /* Append the parts that do not exist. */
  size_t len = strlen(real), rest = strlen(abs + cut);
  char *res = rill_malloc(len + rest + 2);
  if (!res) st = rill_oom();
  if (!st) memcpy(res, real, len + 1);
  for (char *part = abs + cut; !st && *part;) {
    while (*part == '/') part++;
    size_t n = strcspn(part, "/");
    if (n == 0 || (n == 1 && part[0] == '.')) {
      part += n;
      continue;
    }
    if (n == 2 && part[0] == '.' && part[1] == '.') {
      st = rill_error(RILL_FAILED_PRECONDITION,
                      "'%s': '..' after '%s', which does not exist", path, res);
      break;
    }
    if (len > 1 || res[0] != '/') res[len++] = '/';
    memcpy(res + len, part, n);
    len += n;
    res[len] = 0;
    part += n;
  }
  rill_free(real);
  rill_free(abs);
  if (st) {
    rill_free(res);
    return st;
  }
  *out = res;
  return NULL;
}

bool rill_path_under(const char *root, const char *path) {
  size_t n = strlen(root);
  if (n == 1 && root[0] == '/') return path[0] == '/';
  return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static rill_status *write_all(int fd, const void *data, size_t size, const char *tmp) {
  const uint8_t *p = data;
  while (size) {
    size_t chunk = size > (1u << 30) ? (1u << 30) : size;
    ssize_t w = fault_at(RILL_FILE_FAULT_WRITE) ? (errno = ENOSPC, -1) : write(fd, p, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return rill_error(RILL_IO, "cannot write '%s': %s", tmp, w < 0 ? strerror(errno) : "no progress");
    p += w;
    size -= (size_t)w;
  }
  return NULL;
}

rill_status *rill_dir_sync(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return rill_error(RILL_IO, "cannot open directory '%s' to sync it: %s", dir, strerror(errno));
  rill_status *st = NULL;
  /* Some file systems cannot fsync a directory (EINVAL): nothing more to do there. */
  if (fault_at(RILL_FILE_FAULT_FSYNC) ? (errno = EIO, 1) : fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
    st = rill_error(RILL_IO, "cannot sync directory '%s': %s", dir, strerror(errno));
  close(fd);
  return st;
}

static rill_status *sync_dir(const char *path) {
  char *dir = rill_path_dirname(path);
  if (!dir) return rill_oom();
  rill_status *st = rill_dir_sync(dir);
  rill_free(dir);
  return st;
}

/* Writes the parts straight into `path`, which exists and is not a regular file (a
 * character device such as /dev/null or /dev/stdout, a named pipe, a socket): a temp file
 * renamed over it would replace the device or pipe with a plain file. */
static rill_status *write_in_place(const char *path, const rill_file_part *parts, size_t n) {
  int fd = fault_at(RILL_FILE_FAULT_OPEN) ? (errno = EACCES, -1)
                                          : open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return rill_error(RILL_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++)
    if (parts[i].size) st = write_all(fd, parts[i].data, parts[i].size, path);
  if (close(fd) != 0 && !st) st = rill_error(RILL_IO, "cannot close '%s': %s", path, strerror(errno));
  return st;
}

rill_status *rill_file_write_parts(const char *path, const rill_file_part *parts, size_t n) {
  static atomic_uint counter;
  if (!path || !*path) return rill_error(RILL_INVALID_ARGUMENT, "empty file path");
  /* What is there now decides how to write: nothing or a regular file is replaced by a
   * rename; through a symbolic link the file it names is (the link stays); a device or
   * pipe is written into; a directory is refused. */
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return rill_error(RILL_IO, "cannot write '%s': it is a directory", path);
    if (!S_ISREG(sb.st_mode)) return rill_status_wrap(write_in_place(path, parts, n), "writing '%s'", path);
    struct stat lsb;
    if (lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode)) {
      char *target = realpath(path, NULL);
      if (!target)
        return rill_error(RILL_IO, "cannot resolve the link '%s': %s", path, strerror(errno));
      rill_status *st = rill_file_write_parts(target, parts, n);
      free(target);
      return st;
    }
  }
  size_t len = strlen(path);
  size_t cap = len + 64;
  char *tmp = rill_malloc(cap);
  if (!tmp) return rill_oom();
  snprintf(tmp, cap, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));

  rill_status *st = NULL;
  int fd = fault_at(RILL_FILE_FAULT_OPEN)
               ? (errno = EACCES, -1)
               : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    st = rill_error(RILL_IO, "cannot create '%s': %s", tmp, strerror(errno));
    rill_free(tmp);
    return rill_status_wrap(st, "writing '%s'", path);
  }
  for (size_t i = 0; i < n && !st; i++)
    if (parts[i].size) st = write_all(fd, parts[i].data, parts[i].size, tmp);
  if (!st && (fault_at(RILL_FILE_FAULT_FSYNC) ? (errno = EIO, 1) : fsync(fd) != 0))
    st = rill_error(RILL_IO, "cannot sync '%s': %s", tmp, strerror(errno));
  if (close(fd) != 0 && !st) st = rill_error(RILL_IO, "cannot close '%s': %s", tmp, strerror(errno));
  if (!st && (fault_at(RILL_FILE_FAULT_RENAME) ? (errno = EXDEV, 1) : rename(tmp, path) != 0))
    st = rill_error(RILL_IO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
  if (st) {
    unlink(tmp);
    rill_free(tmp);
    return rill_status_wrap(st, "writing '%s'", path);
  }
  rill_free(tmp);
  /* The new content is in place; make the rename itself durable. */
  return rill_status_wrap(sync_dir(path), "writing '%s'", path);
}

rill_status *rill_file_write_new(const char *path, const rill_file_part *parts, size_t n) {
  int fd = fault_at(RILL_FILE_FAULT_OPEN) ? (errno = EACCES, -1)
                                          : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return rill_error(RILL_IO, "cannot create '%s': %s", path, strerror(errno));
  rill_status *st = NULL;
  for (size_t i = 0; i < n && !st; i++)
    if (parts[i].size) st = write_all(fd, parts[i].data, parts[i].size, path);
  if (!st && (fault_at(RILL_FILE_FAULT_FSYNC) ? (errno = EIO, 1) : fsync(fd) != 0))
    st = rill_error(RILL_IO, "cannot sync '%s': %s", path, strerror(errno));
  if (close(fd) != 0 && !st) st = rill_error(RILL_IO, "cannot close '%s': %s", path, strerror(errno));
  if (st) unlink(path);
  return st;
}

/* write_all of each part, its CRC32C folded into *crc a chunk at a time before the chunk
 * is written (crc NULL: plain writes). */
static rill_status *write_parts(int fd, const rill_file_part *parts, size_t n, uint32_t *crc,
                                const char *path, uint64_t *total) {
  rill_status *st = NULL;
  *total = 0;
  for (size_t i = 0; i < n && !st; i++) {
    const uint8_t *p = parts[i].data;
    size_t left = parts[i].size;
    *total += left;
    while (left && !st) {
      size_t len = crc && left > RILL_FILE_CRC_CHUNK ? RILL_FILE_CRC_CHUNK : left;
      if (crc) *crc = rill_crc32c(*crc, p, len);
      st = write_all(fd, p, len, path);
      p += len;
      left -= len;
    }
  }
  return st;
}

rill_status *rill_file_write_start(const char *path, const rill_file_part *parts, size_t n,
                                   bool overwrite, uint32_t *crc, int *fd_out) {
  /* Written over in place, the file exists: non-blocking, so that a named pipe in its
   * place fails (no reader: ENXIO) or is refused below instead of blocking the open. */
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (overwrite ? O_NONBLOCK | O_NOCTTY : O_EXCL);
  int fd = fault_at(RILL_FILE_FAULT_OPEN) ? (errno = EACCES, -1) : open(path, flags, 0644);
  if (fd < 0) return rill_error(RILL_IO, "cannot create '%s': %s", path, strerror(errno));
  rill_status *st = NULL;
  if (overwrite) {
    struct stat sb;
    int fl;
    if (fstat(fd, &sb) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
      st = rill_error(RILL_IO, "cannot examine '%s': %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
      st = rill_error(RILL_IO, "cannot write over '%s': it is %s, not a regular file", path,
                      rill_file_kind(sb.st_mode));
    if (st) {
      close(fd);
      return st;
    }
  }
  uint64_t total = 0;
  st = write_parts(fd, parts, n, crc, path, &total);
  /* Overwritten in place: the old blocks are reused; cut what lies past the new end. */
  if (!st && overwrite && ftruncate(fd, (off_t)total) != 0)
    st = rill_error(RILL_IO, "cannot truncate '%s': %s", path, strerror(errno));
  if (st) {
    close(fd);
    unlink(path);
    return st;
  }
#ifdef SYNC_FILE_RANGE_WRITE
  /* Start the writeback now; rill_file_write_finish then waits for I/O already under
   * way, so the writes of several files overlap. Only a hint: errors show at fsync. */
  (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
  *fd_out = fd;
  return NULL;
}

rill_status *rill_file_write_finish(int fd, const char *path) {
  rill_status *st = NULL;
  if (fault_at(RILL_FILE_FAULT_FSYNC) ? (errno = EIO, 1) : fdatasync(fd) != 0)
    st = rill_error(RILL_IO, "cannot sync '%s': %s", path, strerror(errno));
  if (close(fd) != 0 && !st) st = rill_error(RILL_IO, "cannot close '%s': %s", path, strerror(errno));
  if (st) unlink(path);
  return st;
}

rill_status *rill_file_rename(const char *from, const char *to) {
  if (fault_at(RILL_FILE_FAULT_RENAME) ? (errno = EXDEV, 1) : rename(from, to) != 0)
    return rill_error(RILL_IO, "cannot rename '%s' to '%s': %s", from, to, strerror(errno));
  return NULL;
}

rill_status *rill_dir_make(const char *dir) {
  if (!dir || !*dir) return rill_error(RILL_INVALID_ARGUMENT, "empty directory path");
  if (fault_at(RILL_FILE_FAULT_OPEN))
    return rill_error(RILL_IO, "cannot create directory '%s': %s", dir, strerror(EACCES));
  if (mkdir(dir, 0755) == 0) return NULL;
  if (errno == EEXIST && rill_path_is_dir(dir)) return NULL;
  char *p = rill_strdup(dir);
  if (!p) return rill_oom();
  rill_status *st = NULL;
  size_t len = strlen(p);
  for (size_t i = 1; i <= len && !st; i++) {
    if (p[i] != '/' && p[i] != 0) continue;
    char c = p[i];
    p[i] = 0;
    if ((fault_at(RILL_FILE_FAULT_OPEN) ? (errno = EACCES, -1) : mkdir(p, 0755)) != 0 &&
        (errno != EEXIST || !rill_path_is_dir(p)))
      st = rill_error(RILL_IO, "cannot create directory '%s': %s", p, strerror(errno));
    p[i] = c;
  }
  rill_free(p);
  return st;
}

/* Removes the tree at path[0..len) (NUL-terminated), extending the path in place:
 * no allocation, so a cleanup after running out of memory still works. */
static rill_status *remove_tree_at(char *path, size_t len, size_t cap) {
  struct stat sb;
  if (lstat(path, &sb) != 0) {
    if (errno == ENOENT) return NULL;
    return rill_error(RILL_IO, "cannot stat '%s': %s", path, strerror(errno));
  }
  if (!S_ISDIR(sb.st_mode)) {
    if (unlink(path) != 0 && errno != ENOENT)
      return rill_error(RILL_IO, "cannot remove '%s': %s", path, strerror(errno));
    return NULL;
  }
  DIR *d = opendir(path);
  if (!d) return rill_error(RILL_IO, "cannot open directory '%s': %s", path, strerror(errno));
  rill_status *st = NULL;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    size_t n = strlen(e->d_name);
    if (len + 1 + n + 1 > cap) {
      st = rill_error(RILL_IO, "cannot remove '%s/%s': path too long", path, e->d_name);
      break;
    }
    path[len] = '/';
    memcpy(path + len + 1, e->d_name, n + 1);
    st = remove_tree_at(path, len + 1 + n, cap);
    path[len] = 0;
  }
  closedir(d);
  if (!st && rmdir(path) != 0 && errno != ENOENT)
    st = rill_error(RILL_IO, "cannot remove directory '%s': %s", path, strerror(errno));
  return st;
}

rill_status *rill_dir_remove_tree(const char *path) {
  char buf[PATH_MAX];
  size_t len = strlen(path);
  if (len >= sizeof buf) return rill_error(RILL_IO, "cannot remove '%s': path too long", path);
  memcpy(buf, path, len + 1);
  return remove_tree_at(buf, len, sizeof buf);
}

rill_status *rill_file_write(const char *path, const void *data, size_t size) {
  rill_file_part part = {data, size};
  return rill_file_write_parts(path, &part, 1);
}

rill_status *rill_path_check_var_name(const char *name) {
  if (!name || !*name) return rill_error(RILL_INVALID_ARGUMENT, "empty variable name");
  if (name[0] == '/')
    return rill_error(RILL_INVALID_ARGUMENT,
                      "variable name '%s' is an absolute path: it cannot name a file in the model "
                      "directory",
                      name);
  for (const char *c = name;;) {
    const char *end = strchr(c, '/');
    size_t n = end ? (size_t)(end - c) : strlen(c);
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
      return rill_error(RILL_INVALID_ARGUMENT,
                        "variable name '%s' has an empty, '.' or '..' path component: it would "
                        "escape or confuse the model directory",
                        name);
    if (!end) break;
    c = end + 1;
  }
  return NULL;
}

rill_status *rill_path_join_var(const char *dir, const char *name, char **out) {
  RILL_TRY(rill_path_check_var_name(name));
  if (!dir || !*dir) dir = ".";
  size_t a = strlen(dir), b = strlen(name);
  bool slash = dir[a - 1] == '/';
  char *p = rill_malloc(a + !slash + b + 1);
  if (!p) return rill_oom();
  memcpy(p, dir, a);
  if (!slash) p[a++] = '/';
  memcpy(p + a, name, b + 1);
  *out = p;
  return NULL;
}
