/* Loading the real Paddle models in shared/models, and what goes wrong with bad ones. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/data/scope.h"
#include "framework/io/file.h"
#include "framework/io/stream.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"
#include "support/fail_alloc.h"
#include "rill.h"

#define MODELS RILL_SHARED_DIR "/models"

static rill_model *load_ok(const char *path, const char *params) {
  rill_model *m = NULL;
  rill_status *st = rill_model_load(path, params, &m);
  cr_assert_null(st, "%s: %s", path, rill_status_message(st));
  cr_assert_not_null(m);
  return m;
}

static void assert_load_fails(const char *path, const char *params, rill_code code,
                              const char *part) {
  rill_model *m = NULL;
  rill_status *st = rill_model_load(path, params, &m);
  cr_assert_not_null(st, "%s loaded", path);
  cr_assert_null(m);
  cr_assert_eq(rill_status_code(st), code, "%s: %s", rill_code_name(rill_status_code(st)),
               rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), part), "'%s' lacks '%s'", rill_status_message(st),
            part);
  rill_status_destroy(st);
}

/* The dense tensor `name` of the model's scope (borrowed). */
static rill_tensor *param(rill_model *m, const char *name) {
  rill_variable *v = rill_scope_find_local(rill_model_scope(m), name);
  cr_assert_not_null(v, "no parameter '%s'", name);
  cr_assert_eq(v->kind, RILL_VARKIND_TENSOR);
  return &v->u.tensor;
}

static void assert_dims(const rill_tensor *t, int n, const int64_t *d) {
  cr_assert_eq(t->dims.n, n);
  for (int i = 0; i < n; i++) cr_assert_eq(t->dims.d[i], d[i], "dim %d", i);
}

static size_t count_saved(rill_model *m) {
  const rill_program *p = rill_model_program(m);
  size_t n = 0;
  for (size_t i = 0; i < p->blocks[0].nvars; i++) {
    const rill_var_desc *v = &p->blocks[0].vars[i];
    n += v->persistable && v->type != RILL_VAR_FEED_MINIBATCH && v->type != RILL_VAR_FETCH_LIST;
  }
  return n;
}

static const struct {
  const char *dir, *feed0;
  size_t nfeeds, nparams;
} shared_models[] = {
    {"abalone_bn_mlp", "x", 1, 16},
    {"fit_a_line_raftliu", "x", 1, 2},
    {"luotao1_example_mlp_2018", "img", 1, 6},
    {"mnist_conv_bn_etienne", "img", 1, 10},
    {"mnist_mlp_handwriting", "image", 1, 6},
    {"paddlejs_gesture_rec", "img", 1, 0},
    {"paddlelite_simple_model", "image", 1, 0},
    {"pureboys_word2vec", "firstw", 4, 5},
};

Test(model, loads_every_shared_model) {
  for (size_t i = 0; i < sizeof shared_models / sizeof *shared_models; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", MODELS, shared_models[i].dir);
    rill_model *m = load_ok(path, NULL);
    cr_assert_eq(rill_model_num_inputs(m), shared_models[i].nfeeds, "%s", path);
    cr_assert_str_eq(rill_model_input_name(m, 0), shared_models[i].feed0);
    cr_assert_eq(rill_model_num_outputs(m), 1, "%s", path);
    cr_assert_not_null(rill_model_output_name(m, 0));
    cr_assert_null(rill_model_output_name(m, 1));
    size_t saved = count_saved(m);
    cr_assert_gt(saved, 0);
    cr_assert_eq(rill_scope_size(rill_model_scope(m)), saved, "%s", path);
    if (shared_models[i].nparams) cr_assert_eq(saved, shared_models[i].nparams, "%s", path);
    rill_model_destroy(m);
  }
  rill_model_destroy(NULL);
}

Test(model, word2vec_feeds_follow_col_not_op_order) {
  rill_model *m = load_ok(MODELS "/pureboys_word2vec", NULL);
  const char *want[] = {"firstw", "secondw", "thirdw", "fourthw"};
  for (size_t i = 0; i < 4; i++) cr_assert_str_eq(rill_model_input_name(m, i), want[i]);
  rill_tensor *emb = param(m, "shared_w");
  cr_assert_eq(emb->dims.n, 2);
  cr_assert_eq(emb->dims.d[0], 2074); /* the dictionary size, as the output shape says */
  rill_model_destroy(m);
}

Test(model, parameter_values_and_shapes) {
  rill_model *m = load_ok(MODELS "/fit_a_line_raftliu", NULL);
  rill_tensor *w = param(m, "fc_0.w_0");
  assert_dims(w, 2, (int64_t[]){13, 1});
  /* The same bytes as the file, past its 26-byte header. */
  uint8_t *raw;
  size_t size;
  cr_assert_null(rill_file_read_all(MODELS "/fit_a_line_raftliu/fc_0.w_0", 1 << 20, &raw, &size));
  cr_assert_eq(size, 26 + 52);
  cr_assert_eq(memcmp(rill_tensor_ptr(w), raw + 26, 52), 0);
  rill_free(raw);
  assert_dims(param(m, "fc_0.b_0"), 1, (int64_t[]){1});
  cr_assert_str_eq(rill_model_output_name(m, 0), "save_infer_model/scale_0"); /* fetch names may hold / */
  rill_model_destroy(m);

  m = load_ok(MODELS "/mnist_mlp_handwriting", NULL);
  assert_dims(param(m, "fc_0.w_0"), 2, (int64_t[]){784, 100});
  assert_dims(param(m, "fc_2.b_0"), 1, (int64_t[]){10});
  rill_model_destroy(m);

  m = load_ok(MODELS "/paddlejs_gesture_rec", NULL); /* combined `params` */
  const rill_program *p = rill_model_program(m);
  size_t convs = 0;
  for (size_t i = 0; i < p->blocks[0].nvars; i++) {
    const rill_var_desc *v = &p->blocks[0].vars[i];
    if (!v->persistable || v->type != RILL_VAR_LOD_TENSOR) continue;
    rill_tensor *t = param(m, v->name);
    cr_assert(rill_dims_equal(&t->dims, &v->dims), "%s", v->name);
    const float *f = rill_tensor_ptr(t);
    for (int64_t k = 0; k < rill_tensor_numel(t); k++) cr_assert(isfinite(f[k]), "%s", v->name);
    convs += t->dims.n == 4;
  }
  cr_assert_gt(convs, 10);
  rill_model_destroy(m);

  m = load_ok(MODELS "/paddlelite_simple_model", NULL);
  size_t n4 = 0;
  for (size_t i = 0; i < rill_model_program(m)->blocks[0].nvars; i++) {
    const rill_var_desc *v = &rill_model_program(m)->blocks[0].vars[i];
    if (v->persistable && v->type == RILL_VAR_LOD_TENSOR && param(m, v->name)->dims.n == 4) {
      assert_dims(param(m, v->name), 4, (int64_t[]){32, 3, 3, 3});
      n4++;
    }
  }
  cr_assert_eq(n4, 1);
  rill_model_destroy(m);
}

Test(model, stale_files_are_ignored) {
  rill_model *m = load_ok(MODELS "/luotao1_example_mlp_2018", NULL);
  cr_assert_null(rill_scope_find_local(rill_model_scope(m), "fc_3.w_0"));
  cr_assert_not_null(rill_scope_find_local(rill_model_scope(m), "fc_2.w_0"));
  rill_model_destroy(m);
}

Test(model, every_path_form) {
  rill_model *m = load_ok(MODELS "/mnist_mlp_handwriting/__model__", NULL);
  cr_assert_eq(rill_scope_size(rill_model_scope(m)), 6);
  rill_model_destroy(m);
  m = load_ok(MODELS "/paddlelite_simple_model/model.pdmodel", NULL);
  cr_assert_gt(rill_scope_size(rill_model_scope(m)), 0);
  rill_model_destroy(m);
  m = load_ok(MODELS "/paddlelite_simple_model/model.pdmodel", "model.pdiparams");
  rill_model_destroy(m);
  m = load_ok(MODELS "/paddlelite_simple_model/model", NULL); /* a 2.x prefix */
  cr_assert_gt(rill_scope_size(rill_model_scope(m)), 0);
  rill_model_destroy(m);
  m = load_ok(MODELS "/paddlejs_gesture_rec", "params");
  rill_model_destroy(m);
  assert_load_fails(MODELS "/no_such_model", NULL, RILL_NOT_FOUND, "no_such_model");
  assert_load_fails(MODELS "/paddlejs_gesture_rec", "nope", RILL_NOT_FOUND, "nope");
}

/* ---- doctored copies in a temp directory ---- */

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/io_model_XXXXXX", RILL_BINARY_DIR);
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  cr_assert_eq(system(cmd), 0);
}

static void copy_file(const char *from, const char *to, long cut, const char *extra) {
  uint8_t *data;
  size_t size;
  cr_assert_null(rill_file_read_all(from, 1 << 30, &data, &size));
  size_t n = cut >= 0 && (size_t)cut < size ? (size_t)cut : size;
  rill_file_part parts[2] = {{data, n}, {extra, extra ? strlen(extra) : 0}};
  cr_assert_null(rill_file_write_parts(to, parts, 2));
  rill_free(data);
}

static void tmp_path(char *buf, size_t size, const char *name) {
  snprintf(buf, size, "%s/%s", tmpdir, name);
}

/* paddlelite_simple_model copied with its params cut to `cut` bytes plus `extra`. */
static void copy_lite(long cut, const char *extra) {
  char to[400];
  tmp_path(to, sizeof to, "model.pdmodel");
  copy_file(MODELS "/paddlelite_simple_model/model.pdmodel", to, -1, NULL);
  tmp_path(to, sizeof to, "model.pdiparams");
  copy_file(MODELS "/paddlelite_simple_model/model.pdiparams", to, cut, extra);
}

TestSuite(model_files, .init = make_tmpdir, .fini = remove_tmpdir);

Test(model_files, directory_with_one_pdmodel) {
  copy_lite(-1, NULL);
  rill_model *m = load_ok(tmpdir, NULL);
  cr_assert_eq(rill_model_num_inputs(m), 1);
  rill_model_destroy(m);
  char extra[400];
  tmp_path(extra, sizeof extra, "other.pdmodel");
  copy_file(MODELS "/paddlelite_simple_model/model.pdmodel", extra, -1, NULL);
  assert_load_fails(tmpdir, NULL, RILL_INVALID_ARGUMENT, "2 *.pdmodel");
}

Test(model_files, truncated_combined_file_names_the_file) {
  copy_lite(4000, NULL);
  assert_load_fails(tmpdir, NULL, RILL_CORRUPT, "model.pdiparams: variable '");
  copy_lite(0, NULL);
  assert_load_fails(tmpdir, NULL, RILL_CORRUPT, "model.pdiparams: variable '");
}

Test(model_files, combined_file_with_a_trailing_byte_is_refused) {
  copy_lite(-1, "x");
  assert_load_fails(tmpdir, NULL, RILL_CORRUPT, "model.pdiparams: 1 bytes left after the last");
}

Test(model_files, missing_combined_file) {
  copy_lite(-1, NULL);
  char p[400];
  tmp_path(p, sizeof p, "model.pdiparams");
  cr_assert_eq(unlink(p), 0);
  assert_load_fails(tmpdir, NULL, RILL_NOT_FOUND, "model.pdiparams");
}

/* fit_a_line with its two parameters, optionally written into one combined file. */
static void copy_fit_a_line(bool combined, const char *name) {
  char to[400];
  tmp_path(to, sizeof to, "__model__");
  copy_file(MODELS "/fit_a_line_raftliu/__model__", to, -1, NULL);
  if (!combined) {
    tmp_path(to, sizeof to, "fc_0.b_0");
    copy_file(MODELS "/fit_a_line_raftliu/fc_0.b_0", to, -1, NULL);
    tmp_path(to, sizeof to, "fc_0.w_0");
    copy_file(MODELS "/fit_a_line_raftliu/fc_0.w_0", to, -1, NULL);
    return;
  }
  uint8_t *b, *w;
  size_t nb, nw;
  cr_assert_null(rill_file_read_all(MODELS "/fit_a_line_raftliu/fc_0.b_0", 1 << 20, &b, &nb));
  cr_assert_null(rill_file_read_all(MODELS "/fit_a_line_raftliu/fc_0.w_0", 1 << 20, &w, &nw));
  rill_file_part parts[2] = {{b, nb}, {w, nw}}; /* sorted: fc_0.b_0 < fc_0.w_0 */
  tmp_path(to, sizeof to, name);
  cr_assert_null(rill_file_write_parts(to, parts, 2));
  rill_free(b);
  rill_free(w);
}

Test(model_files, combined_1x_found_by_usual_names) {
  copy_fit_a_line(true, "__params__");
  rill_model *m = load_ok(tmpdir, NULL);
  assert_dims(param(m, "fc_0.w_0"), 2, (int64_t[]){13, 1});
  rill_model_destroy(m);
  /* Per-variable files win when they are all there; the combined file is then stale. */
  char p[400];
  tmp_path(p, sizeof p, "__params__");
  cr_assert_null(rill_file_write(p, "junk", 4));
  copy_fit_a_line(false, NULL);
  m = load_ok(tmpdir, NULL);
  rill_model_destroy(m);
  /* Swapped order in a combined file: the declared shapes catch it. */
  tmp_path(p, sizeof p, "fc_0.b_0");
  cr_assert_eq(unlink(p), 0);
  uint8_t *b, *w;
  size_t nb, nw;
  cr_assert_null(rill_file_read_all(MODELS "/fit_a_line_raftliu/fc_0.b_0", 1 << 20, &b, &nb));
  cr_assert_null(rill_file_read_all(MODELS "/fit_a_line_raftliu/fc_0.w_0", 1 << 20, &w, &nw));
  rill_file_part parts[2] = {{w, nw}, {b, nb}};
  tmp_path(p, sizeof p, "params");
  cr_assert_null(rill_file_write_parts(p, parts, 2));
  tmp_path(p, sizeof p, "__params__");
  cr_assert_eq(unlink(p), 0);
  assert_load_fails(tmpdir, NULL, RILL_INVALID_ARGUMENT,
                    "params: variable 'fc_0.b_0': stored shape [13, 1] does not match the "
                    "declared [1]");
  rill_free(b);
  rill_free(w);
}

Test(model_files, missing_variable_file_is_named) {
  copy_fit_a_line(false, NULL);
  char p[400];
  tmp_path(p, sizeof p, "fc_0.w_0");
  cr_assert_eq(unlink(p), 0);
  assert_load_fails(tmpdir, NULL, RILL_NOT_FOUND, "variable 'fc_0.w_0'");
}

Test(model_files, variable_file_with_trailing_bytes_is_refused) {
  copy_fit_a_line(false, NULL);
  char p[400];
  tmp_path(p, sizeof p, "fc_0.b_0");
  copy_file(MODELS "/fit_a_line_raftliu/fc_0.b_0", p, -1, "zz");
  assert_load_fails(tmpdir, NULL, RILL_CORRUPT, "fc_0.b_0: variable 'fc_0.b_0': 2 unexpected bytes");
}

/* A program whose only parameter has the name `name`. */
static void write_program_with_param(const char *name) {
  rill_program *p = NULL;
  cr_assert_null(rill_program_create(&p));
  cr_assert_null(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32,
                                    (int64_t[]){2}, 1, 0, true));
  void *bytes;
  size_t size;
  cr_assert_null(rill_program_serialize(p, &bytes, &size));
  char path[400];
  tmp_path(path, sizeof path, "__model__");
  cr_assert_null(rill_file_write(path, bytes, size));
  rill_free_buffer(bytes);
  rill_program_destroy(p);
}

Test(model_files, names_never_escape_the_directory) {
  /* A real tensor file where "../w" would point. */
  char p[400];
  snprintf(p, sizeof p, "%s/w", RILL_BINARY_DIR);
  rill_tensor *t = NULL;
  cr_assert_null(rill_tensor_create(RILL_DTYPE_FP32, (int64_t[]){2}, 1, &t));
  cr_assert_null(rill_tensor_save_file(t, p));
  rill_tensor_destroy(t);
  const char *bad[] = {"../w", "a/../../w", p /* absolute */, "./w"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    write_program_with_param(bad[i]);
    assert_load_fails(tmpdir, NULL, RILL_INVALID_ARGUMENT, bad[i]);
  }
  unlink(p);
  /* A name with '/' inside the directory is fine. */
  char sub[400];
  tmp_path(sub, sizeof sub, "sub");
  cr_assert_eq(mkdir(sub, 0755), 0);
  tmp_path(p, sizeof p, "sub/w");
  cr_assert_null(rill_tensor_create(RILL_DTYPE_FP32, (int64_t[]){2}, 1, &t));
  cr_assert_null(rill_tensor_save_file(t, p));
  rill_tensor_destroy(t);
  write_program_with_param("sub/w");
  rill_model *m = load_ok(tmpdir, NULL);
  assert_dims(param(m, "sub/w"), 1, (int64_t[]){2});
  rill_model_destroy(m);
}

typedef struct load_ctx {
  const char *path, *params;
  rill_model *m;
} load_ctx;

static rill_status *load_op(void *ctx) {
  load_ctx *c = ctx;
  return rill_model_load(c->path, c->params, &c->m);
}

static void load_cleanup(void *ctx) {
  load_ctx *c = ctx;
  rill_model_destroy(c->m);
  c->m = NULL;
}

static void fail_each_allocation(const char *path, const char *params) {
  cr_assert_null(rill_registry_init()); /* process-wide tables, built once */
  load_ctx c = {path, params, NULL};
  char why[512] = "";
  long runs = fail_alloc_sweep(load_op, load_cleanup, &c, 100000, false, why, sizeof why);
  cr_assert_gt(runs, 10, "%s: %s", path, why);
}

Test(model, failing_each_allocation_leaks_nothing) {
  fail_each_allocation(MODELS "/fit_a_line_raftliu", NULL);
  fail_each_allocation(MODELS "/paddlelite_simple_model/model.pdmodel", NULL);
  fail_each_allocation(MODELS "/mnist_mlp_handwriting", NULL);
}

Test(model_files, selected_rows_parameters_load) {
  rill_program *p = NULL;
  cr_assert_null(rill_program_create(&p));
  cr_assert_null(rill_block_add_var(p, 0, "a", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32,
                                    (int64_t[]){-1, 2}, 2, 0, true));
  cr_assert_null(rill_block_add_var(p, 0, "emb", RILL_VAR_SELECTED_ROWS, RILL_DTYPE_FP32,
                                    (int64_t[]){10, 2}, 2, 0, true));
  cr_assert_null(rill_block_add_var(p, 0, "tmp", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32,
                                    (int64_t[]){2}, 1, 0, false));
  void *bytes;
  size_t size;
  cr_assert_null(rill_program_serialize(p, &bytes, &size));
  char path[400];
  tmp_path(path, sizeof path, "__model__");
  cr_assert_null(rill_file_write(path, bytes, size));
  rill_free_buffer(bytes);
  rill_program_destroy(p);

  rill_bytes b;
  rill_bytes_init(&b);
  rill_tensor a;
  rill_tensor_init(&a);
  rill_dims d;
  rill_dims_set(&d, (int64_t[]){3, 2}, 2);
  cr_assert_null(rill_tensor_alloc(&a, RILL_DTYPE_FP32, &d));
  memset(rill_tensor_ptr(&a), 0, 24);
  cr_assert_null(rill_stream_write_lod_tensor(&b, &a));
  rill_selected_rows sr;
  rill_selected_rows_init(&sr);
  cr_assert_null(rill_selected_rows_set_rows(&sr, (int64_t[]){4, 9}, 2));
  sr.height = 10;
  rill_dims_set(&d, (int64_t[]){2, 2}, 2);
  cr_assert_null(rill_tensor_alloc(&sr.value, RILL_DTYPE_FP32, &d));
  memset(rill_tensor_ptr(&sr.value), 0, 16);
  cr_assert_null(rill_stream_write_selected_rows(&b, &sr));
  tmp_path(path, sizeof path, "__params__");
  cr_assert_null(rill_file_write(path, b.data, b.size));

  rill_model *m = load_ok(tmpdir, NULL);
  cr_assert_eq(rill_scope_size(rill_model_scope(m)), 2);
  rill_variable *v = rill_scope_find_local(rill_model_scope(m), "emb");
  cr_assert_not_null(v);
  cr_assert_eq(v->kind, RILL_VARKIND_SELECTED_ROWS);
  cr_assert_eq(v->u.rows.nrows, 2);
  cr_assert_eq(v->u.rows.rows[1], 9);
  cr_assert_eq(v->u.rows.height, 10);
  assert_dims(param(m, "a"), 2, (int64_t[]){3, 2});
  rill_model_destroy(m);
  rill_selected_rows_clear(&sr);
  rill_tensor_clear(&a);
  rill_bytes_clear(&b);
}

/* A named pipe in place of a parameter file, a combined file or the program: refused at
 * once, naming it (opening a pipe for reading would wait for a writer; the timeout
 * fails the test instead of hanging it). */
Test(model_files, named_pipes_in_place_of_files_are_refused, .timeout = 30) {
  copy_fit_a_line(false, NULL);
  char p[400];
  tmp_path(p, sizeof p, "fc_0.w_0");
  cr_assert_eq(unlink(p), 0);
  cr_assert_eq(mkfifo(p, 0600), 0);
  assert_load_fails(tmpdir, NULL, RILL_INVALID_ARGUMENT, "fc_0.w_0' is not a regular file (it is a named pipe)");
  char pipe[400];
  tmp_path(pipe, sizeof pipe, "pipe_params");
  cr_assert_eq(mkfifo(pipe, 0600), 0);
  assert_load_fails(tmpdir, pipe, RILL_INVALID_ARGUMENT, "pipe_params' is not a regular file");
  tmp_path(p, sizeof p, "__model__");
  cr_assert_eq(unlink(p), 0);
  cr_assert_eq(mkfifo(p, 0600), 0);
  rill_model *m = NULL;
  rill_status *st = rill_model_load(p, NULL, &m);
  cr_assert_not_null(st, "a pipe loaded as a model");
  cr_assert_null(m);
  cr_assert(strstr(rill_status_message(st), "__model__"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_model_load(tmpdir, NULL, &m);
  cr_assert_not_null(st, "a directory with a pipe for __model__ loaded");
  rill_status_destroy(st);
}
