/* Files: whole-file reads with size checks, crash-safe writes, and joining a directory
 * with a variable name without letting the name escape the directory. */
#ifndef RILL_FRAMEWORK_IO_FILE_H
#define RILL_FRAMEWORK_IO_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "framework/base/status.h"

/* Opens `path` for reading if it is a regular file. The open itself never blocks: a
 * named pipe (FIFO) opened for reading would wait there until a writer appears, so the
 * open is non-blocking and the type is checked on the descriptor (fstat) before anything
 * is read; the flag is cleared again for the ordinary reads that follow. Returns the
 * descriptor (close it), -1 when the file cannot be opened or examined (errno says why),
 * or -2 when it is not a regular file (sb->st_mode says what it is). *sb receives the
 * file's status in both the first and the last case. */
int rill_file_open_regular(const char *path, struct stat *sb);
/* What a non-regular file is, for messages: "a named pipe", "a directory", ... */
const char *rill_file_kind(mode_t mode);

/* Reads the whole regular file `path` into a new buffer (free with rill_free; a byte
 * past the end is always allocated and set to 0). Files larger than `max_size` bytes are
 * refused before anything is allocated. */
rill_status *rill_file_read_all(const char *path, size_t max_size, uint8_t **data, size_t *size);

/* One piece of a file to write. */
typedef struct rill_file_part {
  const void *data;
  size_t size;
} rill_file_part;

/* Writes the parts, in order, as the new content of `path`, crash-safely: a temp file in
 * the same directory, fsync, rename over `path`, fsync of the directory. After a crash
 * `path` holds either the old or the new content. On failure the temp file is removed
 * and the old file is left as it was. A symbolic link is followed: the file it names is
 * replaced and the link kept. A path that names a device or a pipe (/dev/null,
 * /dev/stdout, a FIFO) is written into, never replaced; a directory is an error. */
rill_status *rill_file_write_parts(const char *path, const rill_file_part *parts, size_t n);
rill_status *rill_file_write(const char *path, const void *data, size_t size);

/* Writes the parts as a new file `path` (which must not exist), fsyncs and closes it,
 * without a temp file and rename: for files inside a temp directory that is itself
 * committed by a rename. On failure the file is removed. */
rill_status *rill_file_write_new(const char *path, const rill_file_part *parts, size_t n);
/* The same in two halves, so that several files are in flight at once: _start writes
 * the file and starts its writeback without waiting, returning the open descriptor;
 * _finish waits for the data (fdatasync: a new file's size is part of it) and closes.
 * With `overwrite` an existing file is written over in place (its blocks reused, then
 * cut to the new length) instead of refused. With `crc` (may be NULL), the CRC32C of the
 * bytes written is folded into *crc, each stretch of RILL_FILE_CRC_CHUNK bytes just
 * before it is written, so that the kernel's copy reads it from the cache the checksum
 * left it in instead of from memory again. On failure either removes the file. */
#define RILL_FILE_CRC_CHUNK (256u << 10)
rill_status *rill_file_write_start(const char *path, const rill_file_part *parts, size_t n,
                                   bool overwrite, uint32_t *crc, int *fd);
rill_status *rill_file_write_finish(int fd, const char *path);
/* rename(2) with the error naming both paths (and the fault hook's RENAME step). */
rill_status *rill_file_rename(const char *from, const char *to);
/* fsync of a directory (file systems that cannot sync one are not an error). */
rill_status *rill_dir_sync(const char *dir);
/* mkdir -p. */
rill_status *rill_dir_make(const char *dir);
/* rm -r (does not follow symbolic links; a missing path is not an error). */
rill_status *rill_dir_remove_tree(const char *path);

/* Whether `path` exists (any type) / is a directory / is a regular file. */
bool rill_path_exists(const char *path);
bool rill_path_is_dir(const char *path);
bool rill_path_is_file(const char *path);

/* `dir` + "/" + `name` where `name` is a variable name: it may contain '/' as a path
 * separator but must not be absolute, empty, or have an empty, "." or ".." component,
 * so the result always lies inside `dir`. Free with rill_free. */
rill_status *rill_path_join_var(const char *dir, const char *name, char **out);
/* Checks a variable name as rill_path_join_var does. */
rill_status *rill_path_check_var_name(const char *name);
/* The directory part of `path` ("." when it has none). Free with rill_free. */
char *rill_path_dirname(const char *path);

/* The absolute form of `path` (a relative one is taken from the working directory) with
 * every symbolic link resolved: the longest leading part that exists goes through
 * realpath, the parts after it (which do not exist yet) are appended with empty and "."
 * parts dropped. FAILED_PRECONDITION for an empty path, a ".." among the parts that do
 * not exist, or an existing part that cannot be resolved (a symbolic link to nothing, a
 * loop, no permission). Free with rill_free. */
rill_status *rill_path_resolve(const char *path, char **out);
/* Whether the resolved path `path` is the resolved directory `root` or lies under it. */
bool rill_path_under(const char *root, const char *path);

/* Test hook: make the file layer (the crash-safe writer, rill_file_write_new,
 * rill_file_rename, rill_dir_sync, rill_dir_make) fail at one of its steps, as a full
 * disk or an I/O error would: the next occurrence of the step (rill_file_inject_fault)
 * or the nth (rill_file_inject_fault_at, n >= 1), once. RILL_FILE_FAULT_NONE disarms. */
typedef enum rill_file_fault {
  RILL_FILE_FAULT_NONE = 0,
  RILL_FILE_FAULT_OPEN,
  RILL_FILE_FAULT_WRITE,
  RILL_FILE_FAULT_FSYNC,
  RILL_FILE_FAULT_RENAME,
  RILL_FILE_FAULT_COUNT
} rill_file_fault;
void rill_file_inject_fault(rill_file_fault fault);
void rill_file_inject_fault_at(rill_file_fault fault, long nth);

#endif
