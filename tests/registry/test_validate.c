/* rill_program_validate: unknown ops listed together, slot and variable checks,
 * attributes, and compile-time shape inference with messages naming block, op, slot
 * and variable. */
#include <criterion/criterion.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"

#define OK(expr)                                                                          \
  do {                                                                                    \
    rill_status *ok_st_ = (expr);                                                         \
    cr_assert_null(ok_st_, "%s: %s", #expr, rill_status_message(ok_st_));                 \
  } while (0)

static void expect_error(rill_status *st, const char *const *parts, size_t n) {
  cr_assert_not_null(st, "expected validation to fail");
  for (size_t i = 0; i < n; i++)
    cr_assert_not_null(strstr(rill_status_message(st), parts[i]), "\"%s\" lacks \"%s\"",
                       rill_status_message(st), parts[i]);
  rill_status_destroy(st);
}
#define EXPECT_ERROR(st, ...)                                                             \
  do {                                                                                    \
    const char *p_[] = {__VA_ARGS__};                                                     \
    expect_error((st), p_, sizeof p_ / sizeof p_[0]);                                     \
  } while (0)

static void var(rill_program *p, int32_t block, const char *name, const int64_t *dims, size_t nd,
                bool persistable) {
  OK(rill_block_add_var(p, block, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, nd, 0,
                        persistable));
}

typedef struct arg {
  const char *slot;
  const char *names[3];
  size_t n;
} arg;

static void op(rill_program *p, int32_t block, const char *type, const arg *in, size_t nin,
               const arg *out, size_t nout, const char *int_attr, int32_t v) {
  rill_op_builder *b;
  OK(rill_op_builder_create(type, &b));
  for (size_t i = 0; i < nin; i++) OK(rill_op_builder_input(b, in[i].slot, in[i].names, in[i].n));
  for (size_t i = 0; i < nout; i++) OK(rill_op_builder_output(b, out[i].slot, out[i].names, out[i].n));
  if (int_attr) OK(rill_op_builder_attr_int(b, int_attr, v));
  OK(rill_op_builder_append(b, p, block));
  rill_op_builder_destroy(b);
}

#define ARGS(...) ((const arg[]){__VA_ARGS__}), (sizeof((const arg[]){__VA_ARGS__}) / sizeof(arg))
#define D(...) ((const int64_t[]){__VA_ARGS__}), (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* feed -> mul -> elementwise_add -> softmax -> fetch, with w declared as w_dims. */
static rill_program *mlp(const int64_t *w_dims, size_t wn, const int64_t *h_dims, size_t hn) {
  rill_program *p;
  OK(rill_program_create(&p));
  OK(rill_block_add_var(p, 0, "feed", RILL_VAR_FEED_MINIBATCH, RILL_DTYPE_FP32, NULL, 0, 0, true));
  OK(rill_block_add_var(p, 0, "fetch", RILL_VAR_FETCH_LIST, RILL_DTYPE_FP32, NULL, 0, 0, true));
  var(p, 0, "x", D(-1, 4), false);
  var(p, 0, "w", w_dims, wn, true);
  var(p, 0, "b", D(3), true);
  var(p, 0, "h", h_dims, hn, false);
  var(p, 0, "o", D(-1, 3), false);
  var(p, 0, "s", D(-1, 3), false);
  op(p, 0, "feed", ARGS({"X", {"feed"}, 1}), ARGS({"Out", {"x"}, 1}), "col", 0);
  op(p, 0, "mul", ARGS({"X", {"x"}, 1}, {"Y", {"w"}, 1}), ARGS({"Out", {"h"}, 1}), NULL, 0);
  op(p, 0, "elementwise_add", ARGS({"X", {"h"}, 1}, {"Y", {"b"}, 1}), ARGS({"Out", {"o"}, 1}),
     "axis", 1);
  op(p, 0, "softmax", ARGS({"X", {"o"}, 1}), ARGS({"Out", {"s"}, 1}), NULL, 0);
  op(p, 0, "fetch", ARGS({"X", {"s"}, 1}), ARGS({"Out", {"fetch"}, 1}), "col", 0);
  return p;
}

Test(validate, small_mlp_validates) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  OK(rill_program_validate(p));
  rill_program_destroy(p);
}

Test(validate, unknown_ops_are_listed_together_sorted) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "pyramid_hash", ARGS({"X", {"x"}, 1}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  op(p, 0, "var_conv_2d", ARGS({"X", {"x"}, 1}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  op(p, 0, "pyramid_hash", ARGS({"X", {"x"}, 1}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  rill_status *st = rill_program_validate(p);
  cr_assert_not_null(st);
  cr_assert_str_eq(rill_status_message(st),
                   "program uses ops rill does not have: pyramid_hash, var_conv_2d (load an op "
                   "library that registers them: 'rill run --plugin LIB' or "
                   "rill_load_op_library(), see examples/plugin/README.md; or add them to "
                   "operators/ and kernels/cpu/)");
  rill_status_destroy(st);
  rill_program_destroy(p);
}

Test(validate, inner_dim_mismatch_names_block_op_slot_and_variables) {
  rill_program *p = mlp(D(5, 3), D(-1, 3));
  EXPECT_ERROR(rill_program_validate(p), "block 0", "op #1", "(mul)", "X (x)", "Y (w)");
  rill_program_destroy(p);
}

Test(validate, inferred_shapes_propagate_to_later_ops) {
  /* h is declared with unknown dims: only the inferred [-1, 3] shows that b [3] fits
   * and that a b of [4] would not. */
  rill_program *p = mlp(D(4, 3), D(-1, -1));
  OK(rill_program_validate(p));
  rill_program_destroy(p);
  p = mlp(D(4, 3), D(-1, -1));
  var(p, 0, "b4", D(4), true);
  op(p, 0, "elementwise_add", ARGS({"X", {"h"}, 1}, {"Y", {"b4"}, 1}), ARGS({"Out", {"o"}, 1}),
     "axis", 1);
  EXPECT_ERROR(rill_program_validate(p), "block 0", "op #5", "elementwise_add", "X (h)",
               "Y (b4)", "[-1, 3]");
  rill_program_destroy(p);
}

Test(validate, inferred_output_contradicting_its_declaration_is_reported) {
  rill_program *p = mlp(D(4, 3), D(-1, 7));
  EXPECT_ERROR(rill_program_validate(p), "op #1", "mul", "output Out (h)", "[-1, 3]", "[-1, 7]");
  rill_program_destroy(p);
}

Test(validate, missing_input_slot_is_reported) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "mul", ARGS({"X", {"x"}, 1}), ARGS({"Out", {"h"}, 1}), NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "block 0", "op #5", "mul", "missing input slot Y");
  rill_program_destroy(p);
}

Test(validate, unknown_slot_and_extra_arguments_are_reported) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "relu", ARGS({"X", {"x"}, 1}, {"Z", {"x"}, 1}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "op #5", "relu", "unknown input slot 'Z'");
  rill_program_destroy(p);
  p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "relu", ARGS({"X", {"x", "h"}, 2}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "op #5", "relu", "input slot X takes one variable, has 2");
  rill_program_destroy(p);
}

Test(validate, undeclared_variable_is_reported) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "relu", ARGS({"X", {"nope"}, 1}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "block 0", "op #5", "relu", "X", "'nope'");
  rill_program_destroy(p);
}

Test(validate, sub_blocks_see_parent_variables_not_the_reverse) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  int32_t b1;
  OK(rill_program_append_block(p, 0, &b1));
  var(p, b1, "inner", D(-1, 3), false);
  op(p, b1, "relu", ARGS({"X", {"s"}, 1}), ARGS({"Out", {"inner"}, 1}), NULL, 0);
  OK(rill_program_validate(p));
  op(p, 0, "relu", ARGS({"X", {"inner"}, 1}), ARGS({"Out", {"o"}, 1}), NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "block 0", "op #5", "'inner'");
  rill_program_destroy(p);
}

Test(validate, bad_attribute_type_is_reported) {
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  rill_op_desc *m = &p->blocks[0].ops[1];
  rill_attr *a = rill_realloc(m->attrs, (m->nattrs + 1) * sizeof *a);
  cr_assert_not_null(a);
  m->attrs = a;
  memset(&a[m->nattrs], 0, sizeof *a);
  a[m->nattrs].name = rill_strdup("x_num_col_dims");
  a[m->nattrs].value.type = RILL_ATTR_STRING;
  a[m->nattrs].value.v.s = rill_strdup("1");
  m->nattrs++;
  EXPECT_ERROR(rill_program_validate(p), "op #1", "mul", "x_num_col_dims", "STRING");
  rill_program_destroy(p);
}

static rill_status *noop_kernel(rill_kernel_ctx *ctx) { return NULL; }

static const rill_slot_schema plugin_in[] = {{"X", 0, ""}};
static const rill_attr_schema plugin_attrs[] = {
    {"k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_INT}, "needed"}};
static const rill_op_schema no_kernel_op = {.type = "test_no_kernel_op", .inputs = plugin_in,
                                            .ninputs = 1, .kernel_dtype_slot = -1, .dtype_attr = -1};
static const rill_op_schema required_op = {.type = "test_required_op", .inputs = plugin_in,
                                           .ninputs = 1, .attrs = plugin_attrs, .nattrs = 1,
                                           .kernel_dtype_slot = -1, .dtype_attr = -1};

Test(validate, op_without_kernel_is_named) {
  OK(rill_registry_add_op(&no_kernel_op));
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "test_no_kernel_op", ARGS({"X", {"x"}, 1}), NULL, 0, NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "no registered backend has a kernel", "test_no_kernel_op");
  rill_program_destroy(p);
}

Test(validate, missing_required_attribute_is_reported) {
  OK(rill_registry_add_op(&required_op));
  rill_kernel_def k = {"test_required_op", RILL_DEVICE_CPU, RILL_KERNEL_ANY_DTYPE, noop_kernel, NULL};
  OK(rill_registry_add_kernel(&k));
  rill_program *p = mlp(D(4, 3), D(-1, 3));
  op(p, 0, "test_required_op", ARGS({"X", {"x"}, 1}), NULL, 0, NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "op #5", "test_required_op", "required", "'k'");
  op(p, 0, "test_required_op", ARGS({"X", {"x"}, 1}), NULL, 0, "k", 2);
  rill_block_remove_op(p, 0, 5);
  OK(rill_program_validate(p));
  rill_program_destroy(p);
}

Test(validate, fill_constant_and_mean_infer_at_compile_time) {
  rill_program *p;
  OK(rill_program_create(&p));
  var(p, 0, "c", D(2, 3), false);
  var(p, 0, "m", D(1), false);
  rill_op_builder *b;
  OK(rill_op_builder_create("fill_constant", &b));
  const char *out[1] = {"c"};
  OK(rill_op_builder_output(b, "Out", out, 1));
  int64_t shape[2] = {2, 4};
  OK(rill_op_builder_attr_longs(b, "shape", shape, 2));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  op(p, 0, "mean", ARGS({"X", {"c"}, 1}), ARGS({"Out", {"m"}, 1}), NULL, 0);
  EXPECT_ERROR(rill_program_validate(p), "op #0", "fill_constant", "output Out (c)", "[2, 4]",
               "[2, 3]");
  rill_program_destroy(p);
}

Test(validate, program_is_not_modified) {
  rill_program *p = mlp(D(4, 3), D(-1, -1)), *copy;
  OK(rill_program_clone(p, &copy));
  OK(rill_program_validate(p));
  cr_assert(rill_program_equal(p, copy));
  rill_program_destroy(p);
  rill_program_destroy(copy);
}
