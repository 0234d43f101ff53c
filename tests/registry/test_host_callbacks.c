/* Host callbacks (rill_host_callback_register) called by the py_func op: a C callback
 * computes the op's output with a shape of its choosing; a failing callback fails the run
 * with the op, the id and its name in the message; a missing output, an unknown id, a
 * bad registration and unregistering a running callback are clear errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rill.h"

#define OK(expr)                                                                     \
  do {                                                                               \
    rill_status *st_ = (expr);                                                       \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));                  \
  } while (0)

/* Out = [x..., x...] * scale: twice as many elements as X, whatever was declared. */
static rill_status *twice(void *user, rill_tensor *const *in, size_t nin, rill_tensor **out,
                          size_t nout) {
  if (nin != 1 || nout != 1 || !in[0])
    return rill_status_create(RILL_INVALID_ARGUMENT, "want one input and one output");
  float scale = *(const float *)user;
  int64_t n = rill_tensor_numel(in[0]);
  int64_t dims[] = {2 * n};
  rill_status *st = rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &out[0]);
  if (st) return st;
  const float *x = rill_tensor_data(in[0]);
  float *y = rill_tensor_data(out[0]);
  for (int64_t i = 0; i < n; i++) y[i] = y[n + i] = x[i] * scale;
  return NULL;
}

static rill_status *fails(void *user, rill_tensor *const *in, size_t nin, rill_tensor **out,
                          size_t nout) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout;
  return rill_status_create(RILL_OUT_OF_RANGE, "value 7 is too large");
}

static rill_status *returns_nothing(void *user, rill_tensor *const *in, size_t nin,
                                    rill_tensor **out, size_t nout) {
  (void)user, (void)in, (void)nin, (void)out, (void)nout;
  return NULL;
}

static int64_t self_id;
static rill_code unregister_code;

static rill_status *unregisters_itself(void *user, rill_tensor *const *in, size_t nin,
                                       rill_tensor **out, size_t nout) {
  rill_status *st = rill_host_callback_unregister(self_id);
  unregister_code = st ? rill_status_code(st) : RILL_OK;
  rill_status_destroy(st);
  return twice(user, in, nin, out, nout);
}

static rill_program *program_calling(int64_t id) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t dims[] = {3};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("py_func", &b));
  const char *xn = "x", *yn = "y";
  OK(rill_op_builder_input(b, "X", &xn, 1));
  OK(rill_op_builder_output(b, "Out", &yn, 1));
  OK(rill_op_builder_attr_int(b, "forward_callable_id", (int32_t)id));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  return p;
}

/* Runs the program on x = [1, 2, 3]; *y gets the output or the status is returned. */
static rill_status *run(rill_program *p, rill_tensor **y) {
  rill_executor *e;
  OK(rill_executor_create(NULL, &e));
  rill_scope *s;
  OK(rill_scope_create(NULL, &s));
  const int64_t dims[] = {3};
  rill_tensor *x;
  OK(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x));
  float *xv = rill_tensor_data(x);
  for (int i = 0; i < 3; i++) xv[i] = (float)(i + 1);
  const char *xn = "x", *yn = "y";
  rill_status *st = rill_executor_run(e, p, s, &xn, &x, 1, &yn, 1, y);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return st;
}

/* Runs a program calling `id`, which must fail; returns the status. */
static rill_status *run_failing(int64_t id) {
  rill_program *p = program_calling(id);
  rill_tensor *y = NULL;
  rill_status *st = run(p, &y);
  cr_assert_not_null(st, "the run of callback %lld succeeded", (long long)id);
  cr_expect_null(y);
  rill_program_destroy(p);
  return st;
}

Test(host_callbacks, a_c_callback_computes_the_output_and_its_shape) {
  static float scale = 2.5f;
  int64_t id = -1;
  OK(rill_host_callback_register("twice", twice, &scale, &id));
  cr_assert_geq(id, 0);
  rill_program *p = program_calling(id);
  rill_tensor *y;
  OK(run(p, &y));
  cr_assert_eq(rill_tensor_ndim(y), 1);
  cr_assert_eq(rill_tensor_dims(y)[0], 6, "the callback's shape, not the declared one");
  const float *yv = rill_tensor_data(y);
  for (int i = 0; i < 6; i++) cr_expect_eq(yv[i], (float)(i % 3 + 1) * 2.5f, "element %d", i);
  rill_tensor_destroy(y);
  OK(rill_host_callback_unregister(id));
  rill_program_destroy(p);
}

Test(host_callbacks, a_failing_callback_fails_the_run_naming_op_id_and_callback) {
  int64_t id;
  OK(rill_host_callback_register("checker.validate", fails, NULL, &id));
  rill_status *st = run_failing(id);
  cr_expect_eq(rill_status_code(st), RILL_OUT_OF_RANGE, "the callback's code is kept");
  const char *m = rill_status_message(st);
  cr_expect(strstr(m, "py_func"), "%s", m);
  cr_expect(strstr(m, "checker.validate"), "%s", m);
  cr_expect(strstr(m, "value 7 is too large"), "%s", m);
  char idtext[32];
  snprintf(idtext, sizeof idtext, "callback %lld", (long long)id);
  cr_expect(strstr(m, idtext), "%s", m);
  rill_status_destroy(st);
}

Test(host_callbacks, a_callback_returning_no_tensor_for_an_output_is_an_error) {
  int64_t id;
  OK(rill_host_callback_register("lazy", returns_nothing, NULL, &id));
  rill_status *st = run_failing(id);
  const char *m = rill_status_message(st);
  cr_expect(strstr(m, "returned no tensor for output Out #0 (y)"), "%s", m);
  cr_expect(strstr(m, "lazy"), "%s", m);
  rill_status_destroy(st);
}

Test(host_callbacks, an_unknown_id_is_not_found) {
  rill_status *st = run_failing(1000000);
  cr_expect_eq(rill_status_code(st), RILL_NOT_FOUND);
  cr_expect(strstr(rill_status_message(st), "host callback 1000000 is not registered"), "%s",
            rill_status_message(st));
  rill_status_destroy(st);
}

Test(host_callbacks, registration_errors_and_unregistering) {
  int64_t id = -7;
  rill_status *st = rill_host_callback_register("x", NULL, NULL, &id);
  cr_expect(st && rill_status_code(st) == RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);
  cr_expect_eq(id, -7, "id written on error");
  st = rill_host_callback_register("x", twice, NULL, NULL);
  cr_expect(st && rill_status_code(st) == RILL_INVALID_ARGUMENT);
  rill_status_destroy(st);

  int64_t a, b;
  OK(rill_host_callback_register(NULL, returns_nothing, NULL, &a));
  OK(rill_host_callback_register("b", returns_nothing, NULL, &b));
  cr_expect_neq(a, b);
  OK(rill_host_callback_unregister(a));
  st = rill_host_callback_unregister(a);
  cr_expect(st && rill_status_code(st) == RILL_NOT_FOUND, "unregistered twice");
  rill_status_destroy(st);
  st = rill_host_callback_unregister(-1);
  cr_expect(st && rill_status_code(st) == RILL_NOT_FOUND);
  rill_status_destroy(st);
  int64_t c;
  OK(rill_host_callback_register("c", returns_nothing, NULL, &c));
  cr_expect(c != a && c != b, "an id was reused");
  OK(rill_host_callback_unregister(b));
  OK(rill_host_callback_unregister(c));
}

Test(host_callbacks, a_running_callback_cannot_be_unregistered) {
  static float one = 1.0f;
  OK(rill_host_callback_register("self", unregisters_itself, &one, &self_id));
  rill_program *p = program_calling(self_id);
  rill_tensor *y;
  OK(run(p, &y));
  rill_tensor_destroy(y);
  cr_expect_eq(unregister_code, RILL_FAILED_PRECONDITION);
  OK(rill_host_callback_unregister(self_id)); /* after the run it may go */
  rill_program_destroy(p);
}
