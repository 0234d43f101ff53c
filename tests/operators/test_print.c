/* print: Out is In (LoD kept), the text on stderr has Paddle's layout, the gradient
 * passes Out@GRAD through, and a bad phase is an error naming the op. */
#include "nn_test.h"

#include <unistd.h>

Test(print, passes_in_through_and_prints_paddles_layout) {
  fflush(stderr);
  FILE *cap = tmpfile();
  cr_assert_not_null(cap);
  int saved = dup(2);
  dup2(fileno(cap), 2);
  op_harness *h = harness("print");
  bind_input(h, "In", "feat", RILL_DTYPE_INT64, DIMS(2, 3), (int64_t[]){0, 1, 2, 3, 4, 5});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_string(h, "message", "hello"));
  OK(op_harness_attr_int(h, "summarize", 4));
  OK(op_harness_run(h));
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 3));
  cr_assert_eq(((const int64_t *)rill_tensor_ptr(out))[5], 5);
  op_harness_destroy(h);
  char buf[512] = {0};
  rewind(cap);
  size_t n = fread(buf, 1, sizeof buf - 1, cap);
  fclose(cap);
  cr_assert(n > 0);
  const char *want[] = {"\thello\tThe place is:CPUPlace\n", "Tensor[feat]\n", "\tshape: [2,3,]\n",
                        "\tdtype: l\n", "\tdata: 0,1,2,3,\n"};
  for (size_t i = 0; i < 5; i++)
    cr_assert_not_null(strstr(buf, want[i]), "%s lacks %s", buf, want[i]);
}

static void backward_only(op_harness *h, const void *arg) {
  (void)arg;
  OK(op_harness_attr_string(h, "print_phase", "BACKWARD"));
}

Test(print, gradient_passes_through) {
  double x[6];
  fill_rand(x, 6, 3);
  fd_case fc = {.op = "print", .out_slots = {"Out"}, .out_names = {"out"}, .nout = 1,
                .attrs = backward_only, .tol = 1e-8, .nin = 1};
  fc.in[0] = (fd_input){"In", "x", {2, 3}, 2, x, true};
  FILE *null = fopen("/dev/null", "w");
  int saved = dup(2);
  dup2(fileno(null), 2);
  fd_check(&fc);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  fclose(null);
}

Test(print, bad_phase_fails_naming_op) {
  op_harness *h = harness("print");
  bind_input(h, "In", "feat", RILL_DTYPE_FP32, DIMS(2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_string(h, "print_phase", "SIDEWAYS"));
  EXPECT_ERROR(op_harness_infer(h), "print", "print_phase 'SIDEWAYS'");
  op_harness_destroy(h);
}
