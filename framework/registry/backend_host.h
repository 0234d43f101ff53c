/* What a backend in its own shared library gets from the library that loads it.
 *
 * Such a backend (kernels/cuda: librill_cuda.so) links no rill code: the library that
 * loads it may be librill.so opened with RTLD_LOCAL (Python's ctypes), or an executable
 * linked with librill_static.a, whose symbols a module cannot bind to. So the loader
 * hands it this table of the library's own functions, and the module defines the few
 * internal functions its kernels call (rill_kernel_error, rill_tensor_numel, ...) as
 * calls through it. Every status and every host allocation is then the loading
 * library's, through its injectable allocator.
 *
 * The module exports one function, named by the lazy backend's `entry`, of type
 * rill_backend_open_fn: it checks the table's version, starts its runtime, and gives
 * back its backend table, or an error saying why it cannot serve (no driver, no
 * device), which the loader keeps and repeats in rill_place_check's message. */
#ifndef RILL_REGISTRY_BACKEND_HOST_H
#define RILL_REGISTRY_BACKEND_HOST_H

#include "framework/registry/registry.h"

#define RILL_BACKEND_HOST_VERSION 1u

typedef struct rill_backend_host {
  uint32_t version;     /* RILL_BACKEND_HOST_VERSION */
  uint32_t struct_size; /* sizeof(rill_backend_host) */
  /* A status with `code` and the message, preformatted. */
  rill_status *(*error)(rill_code code, const char *message);
  /* rill_kernel_error with a preformatted message. */
  rill_status *(*kernel_error)(const rill_kernel_ctx *ctx, const char *message);
  rill_status *(*oom)(void);
  void (*status_destroy)(rill_status *status);
  const char *(*status_message)(const rill_status *status);
  void *(*malloc)(size_t size);
  void *(*calloc)(size_t count, size_t size);
  void (*free)(void *p);
  rill_tensor *(*variable_tensor)(rill_variable *v);
  int64_t (*tensor_numel)(const rill_tensor *t);
  size_t (*tensor_nbytes)(const rill_tensor *t);
  bool (*tensor_is_set)(const rill_tensor *t);
  bool (*dims_equal)(const rill_dims *a, const rill_dims *b);
  int64_t (*dims_prod)(const rill_dims *dims, int begin, int end);
  char *(*dims_str)(const rill_dims *dims, char *buf, size_t size);
  const char *(*dtype_name)(rill_dtype dtype);
  size_t (*dtype_size)(rill_dtype dtype);
  /* For kernels that make their own outputs (selected rows): */
  void (*variable_clear)(rill_variable *v);
  rill_selected_rows *(*variable_selected_rows)(rill_variable *v);
  rill_status *(*selected_rows_set_rows)(rill_selected_rows *sr, const int64_t *rows, size_t n);
  rill_status *(*tensor_alloc_on)(rill_tensor *t, rill_dtype dtype, const rill_dims *dims, rill_place place,
                                  const rill_device_memory *mem);
  void (*lod_clear)(rill_lod *lod);
  const char *(*var_kind_name)(rill_var_kind kind);
  /* For kernels that copy any kind of variable (assign): */
  rill_status *(*lod_copy)(rill_lod *dst, const rill_lod *src);
  rill_tensor_array *(*variable_array)(rill_variable *v);
  rill_status *(*tensor_array_resize)(rill_tensor_array *a, size_t n);
  void (*tensor_clear)(rill_tensor *t);
  void (*selected_rows_init)(rill_selected_rows *sr);
  void (*selected_rows_clear)(rill_selected_rows *sr);
} rill_backend_host;

typedef rill_status *(*rill_backend_open_fn)(const rill_backend_host *host,
                                             const rill_backend **out);

/* A backend built as its own shared library: registered the first time a place of its
 * device kind is checked (rill_place_check, hence every executor and predictor made for
 * it) or rill_lazy_backend_load is called. kernels/backends.c lists them. */
typedef struct rill_lazy_backend {
  rill_device device;
  const char *file;  /* "librill_cuda.so": looked for beside the library, then by dlopen */
  const char *env;   /* an environment variable naming the file instead; "" disables */
  const char *entry; /* the rill_backend_open_fn it exports */
} rill_lazy_backend;

extern const rill_lazy_backend rill_lazy_backends[];
extern const size_t rill_lazy_backend_count;

/* Loads and registers the lazy backend of `device`, once: NULL when it is registered
 * (now or before, or the device kind has a built-in backend); else the reason, the same
 * on every call (NOT_FOUND when none is listed for the device kind). */
rill_status *rill_lazy_backend_load(rill_device device);

#endif
