/* Saving a program file, and saving and loading chosen variables of a program (rill.h,
 * "program support") in Paddle's save/load_persistables layouts: one tensor-stream
 * file per variable named as the variable, or one combined file holding the streams
 * back to back in the order given (Paddle's save_combine: sorted by name).
 *
 * Loading reads everything into a staging scope first and moves the values into the
 * caller's scope only when every variable was read and checked against its
 * declaration, so a bad file leaves the scope as it was. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/data/scope.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"
#include "framework/io/vars.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "rill.h"

static rill_status *check_args(const char *fn, const rill_program *program, rill_scope *scope,
                               const char *dir, const char *const *names, size_t n) {
  if (!program || !scope || !dir || (n && !names))
    return rill_error(RILL_INVALID_ARGUMENT, "%s: NULL argument", fn);
  for (size_t i = 0; i < n; i++) {
    if (!names[i]) return rill_error(RILL_INVALID_ARGUMENT, "%s: name %zu is NULL", fn, i);
    if (!rill_program_find_var(program, 0, names[i]))
      return rill_error(RILL_NOT_FOUND, "%s: variable '%s' is not declared in block 0 of the program",
                        fn, names[i]);
    for (size_t k = 0; k < i; k++)
      if (strcmp(names[k], names[i]) == 0)
        return rill_error(RILL_INVALID_ARGUMENT, "%s: variable '%s' is named twice", fn, names[i]);
  }
  return NULL;
}

static const rill_place HOST = {RILL_HOST_DEVICE, 0};

/* Appends the stream of variable `name` of `scope` to `out`. */
static rill_status *write_var(rill_scope *scope, const char *name, rill_bytes *out) {
  rill_variable *v = rill_scope_find(scope, name);
  if (!v || v->kind == RILL_VARKIND_EMPTY)
    return rill_error(RILL_NOT_FOUND,
                      "variable '%s' has no value in the scope (was the startup program run?)",
                      name);
  if (v->kind == RILL_VARKIND_TENSOR) {
    if (!v->u.tensor.buf && rill_tensor_nbytes(&v->u.tensor))
      return rill_error(RILL_FAILED_PRECONDITION, "variable '%s' holds no data", name);
    if (rill_tensor_place(&v->u.tensor).device == RILL_HOST_DEVICE)
      return rill_stream_write_lod_tensor(out, &v->u.tensor);
    /* Left on a device by a run there: written from a host copy. */
    rill_tensor host;
    rill_tensor_init(&host);
    rill_status *st = rill_tensor_copy_at(&host, &v->u.tensor, HOST);
    if (!st) st = rill_stream_write_lod_tensor(out, &host);
    rill_tensor_clear(&host);
    return rill_status_wrap(st, "variable '%s'", name);
  }
  if (v->kind == RILL_VARKIND_SELECTED_ROWS) {
    const rill_selected_rows *rows = &v->u.rows;
    if (rill_tensor_place(&rows->value).device == RILL_HOST_DEVICE)
      return rill_stream_write_selected_rows(out, rows);
    rill_selected_rows host = *rows;
    rill_tensor_init(&host.value);
    rill_status *st = rill_tensor_copy_at(&host.value, &rows->value, HOST);
    if (!st) st = rill_stream_write_selected_rows(out, &host);
    rill_tensor_clear(&host.value);
    return rill_status_wrap(st, "variable '%s'", name);
  }
  return rill_error(RILL_UNIMPLEMENTED, "variable '%s' holds a %s, which has no file format", name,
                    rill_var_kind_name(v->kind));
}

rill_status *rill_program_save_vars(const rill_program *program, rill_scope *scope,
                                    const char *dir, const char *const *names, size_t n,
                                    const char *filename) {
  RILL_TRY(check_args("rill_program_save_vars", program, scope, dir, names, n));
  rill_bytes b;
  rill_bytes_init(&b);
  rill_status *st = NULL;
  char *path = NULL;
  if (filename) {
    st = rill_path_join_var(dir, filename, &path);
    for (size_t i = 0; i < n && !st; i++) st = write_var(scope, names[i], &b);
    if (!st) st = rill_file_write(path, b.data, b.size);
    if (st) st = rill_status_wrap(st, "saving combined file '%s'", path ? path : filename);
  } else {
    for (size_t i = 0; i < n && !st; i++) {
      b.size = 0;
      rill_free(path);
      path = NULL;
      st = rill_path_join_var(dir, names[i], &path);
      if (!st) st = write_var(scope, names[i], &b);
      if (!st) st = rill_file_write(path, b.data, b.size);
      if (st) st = rill_status_wrap(st, "saving variable '%s' into '%s'", names[i], dir);
    }
  }
  rill_free(path);
  rill_bytes_clear(&b);
  return st;
}

static rill_status *read_one(rill_reader *r, const rill_program *program, const char *name,
                             rill_scope *staging) {
  const rill_var_desc *v = rill_program_find_var(program, 0, name);
  return rill_io_read_var(r, v, staging);
}

static rill_status *load_into(const rill_program *program, const char *dir,
                              const char *const *names, size_t n, const char *filename,
                              rill_scope *staging) {
  rill_status *st = NULL;
  char *path = NULL;
  rill_reader r;
  if (filename) {
    RILL_TRY(rill_path_join_var(dir, filename, &path));
    st = rill_reader_open(&r, path);
    if (!st) {
      for (size_t i = 0; i < n && !st; i++) st = read_one(&r, program, names[i], staging);
      if (!st && rill_reader_left(&r))
        st = rill_error(RILL_CORRUPT,
                        "%s: %zu bytes left after the last variable '%s': the file holds more "
                        "than the %zu variables asked for",
                        path, rill_reader_left(&r), n ? names[n - 1] : "", n);
      rill_reader_close(&r);
    }
    rill_free(path);
    return st;
  }
  for (size_t i = 0; i < n && !st; i++) {
    st = rill_path_join_var(dir, names[i], &path);
    if (st) break;
    st = rill_status_wrap(rill_reader_open(&r, path), "variable '%s'", names[i]);
    if (!st) {
      st = read_one(&r, program, names[i], staging);
      if (!st && rill_reader_left(&r))
        st = rill_error(RILL_CORRUPT, "%s: variable '%s': %zu unexpected bytes after the tensor",
                        path, names[i], rill_reader_left(&r));
      rill_reader_close(&r);
    }
    rill_free(path);
    path = NULL;
  }
  return st;
}

rill_status *rill_program_load_vars(const rill_program *program, rill_scope *scope,
                                    const char *dir, const char *const *names, size_t n,
                                    const char *filename) {
  RILL_TRY(check_args("rill_program_load_vars", program, scope, dir, names, n));
  rill_scope *staging;
  RILL_TRY(rill_scope_create(NULL, &staging));
  rill_status *st = load_into(program, dir, names, n, filename, staging);
  /* Every destination first, so that a failure here moves nothing. */
  rill_variable **dst = NULL;
  if (!st && n) {
    dst = rill_calloc(n, sizeof *dst);
    if (!dst) st = rill_oom();
  }
  for (size_t i = 0; i < n && !st; i++) {
    rill_variable *src = rill_scope_find_local(staging, names[i]);
    st = rill_scope_var(scope, names[i], &dst[i]);
    if (!st && dst[i]->kind != RILL_VARKIND_EMPTY && dst[i]->kind != src->kind)
      st = rill_error(RILL_FAILED_PRECONDITION,
                      "variable '%s' holds a %s in the scope but the file holds a %s", names[i],
                      rill_var_kind_name(dst[i]->kind), rill_var_kind_name(src->kind));
  }
  for (size_t i = 0; i < n && !st; i++) {
    rill_variable *src = rill_scope_find_local(staging, names[i]);
    rill_variable tmp = *dst[i];
    *dst[i] = *src;
    *src = tmp;
  }
  rill_free(dst);
  rill_scope_destroy(staging);
  if (st) st = rill_status_wrap(st, "loading variables from '%s'", dir);
  return st;
}

rill_status *rill_program_save(const rill_program *program, const char *path) {
  if (!program || !path) return rill_error(RILL_INVALID_ARGUMENT, "rill_program_save: NULL argument");
  uint8_t *bytes = NULL;
  size_t size = 0;
  RILL_TRY(rill_program_encode(program, &bytes, &size));
  rill_status *st = rill_file_write(path, bytes, size);
  rill_free(bytes);
  if (st) st = rill_status_wrap(st, "saving program file '%s'", path);
  return st;
}
