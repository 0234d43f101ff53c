/* Builds y = 2x + 1 through the public API of an installed rill and checks the answer. */
#include <rill.h>
#include <stdio.h>

static int fail(rill_status *st) {
  fprintf(stderr, "consumer: %s\n", rill_status_message(st));
  rill_status_destroy(st);
  return 1;
}

int main(void) {
  /* The installed header and library are the same version. */
  if (rill_version_number() != RILL_VERSION_NUMBER) {
    fprintf(stderr, "consumer: library %s, header %d.%d.%d\n", rill_version(), RILL_VERSION_MAJOR,
            RILL_VERSION_MINOR, RILL_VERSION_PATCH);
    return 1;
  }
  printf("consumer: rill %s\n", rill_version());
  rill_program *p = NULL;
  rill_status *st = rill_program_create(&p);
  if (st) return fail(st);
  int64_t dims[] = {2};
  if ((st = rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false)) ||
      (st = rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false)))
    return fail(st);
  rill_op_builder *b = NULL;
  const char *x[] = {"x"}, *y[] = {"y"};
  if ((st = rill_op_builder_create("scale", &b)) || (st = rill_op_builder_input(b, "X", x, 1)) ||
      (st = rill_op_builder_output(b, "Out", y, 1)) ||
      (st = rill_op_builder_attr_float(b, "scale", 2.0f)) ||
      (st = rill_op_builder_attr_float(b, "bias", 1.0f)) || (st = rill_op_builder_append(b, p, 0)))
    return fail(st);
  rill_op_builder_destroy(b);

  float data[] = {1.0f, 4.0f};
  rill_tensor *in = NULL, *out = NULL;
  if ((st = rill_tensor_create_from_data(RILL_DTYPE_FP32, dims, 1, data, sizeof data, NULL, NULL, &in)))
    return fail(st);
  rill_executor *exe = NULL;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  rill_scope *scope = NULL;
  if ((st = rill_executor_create(&opts, &exe)) || (st = rill_scope_create(NULL, &scope))) return fail(st);
  const char *feed_names[] = {"x"}, *fetch_names[] = {"y"};
  if ((st = rill_executor_run(exe, p, scope, feed_names, &in, 1, fetch_names, 1, &out))) return fail(st);
  const float *r = rill_tensor_data(out);
  int ok = r[0] == 3.0f && r[1] == 9.0f;
  printf("consumer: y = [%g, %g] %s\n", r[0], r[1], ok ? "ok" : "WRONG");
  rill_tensor_destroy(out);
  rill_tensor_destroy(in);
  rill_scope_destroy(scope);
  rill_executor_destroy(exe);
  rill_program_destroy(p);
  return ok ? 0 : 1;
}
