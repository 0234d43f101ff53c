/* The shared Paddle models on the GPU: each runs on an executor at cuda:0 (ops without
 * a CUDA kernel on the host, with copies between) and must reproduce its refs/ outputs
 * (rtol 1e-4, atol 1e-5), twice, so that the second run reuses the device memory the
 * first left cached. Without a CUDA device each test skips, saying so. */
#include <math.h>

#include "cuda_test.h"


REPORT_GPU_SKIPS("cuda_models")

static void check_model(const char *name) {
  NEED_CUDA_DEVICE();
  char path[1024];
  rill_model *model;
  snprintf(path, sizeof path, "%s/models/%s", shared_dir(), name);
  OK(rill_model_load(path, NULL, &model));
  size_t nfeeds = rill_model_num_inputs(model), nfetch = rill_model_num_outputs(model);
  cr_assert(nfeeds <= 8 && nfetch <= 8);
  rill_tensor *feeds[8], *outs[8];
  const char *feed_names[8], *fetch_names[8];
  for (size_t i = 0; i < nfeeds; i++) {
    feed_names[i] = rill_model_input_name(model, i);
    snprintf(path, sizeof path, "%s/models/%s/refs/input_%s.npy", shared_dir(), name, feed_names[i]);
    OK(rill_tensor_load_npy(path, &feeds[i]));
  }
  for (size_t i = 0; i < nfetch; i++) fetch_names[i] = rill_model_output_name(model, i);
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){RILL_DEVICE_CUDA, 0};
  rill_executor *exe;
  rill_scope *scope;
  OK(rill_executor_create(&o, &exe));
  OK(rill_scope_create(rill_model_scope(model), &scope));
  for (int round = 0; round < 2; round++) {
    OK(rill_executor_run(exe, rill_model_program(model), scope, feed_names, feeds, nfeeds, fetch_names, nfetch,
                         outs));
    for (size_t c = 0; c < nfetch; c++) {
      rill_tensor *want;
      snprintf(path, sizeof path, "%s/models/%s/refs/output_%zu.npy", shared_dir(), name, c);
      OK(rill_tensor_load_npy(path, &want));
      cr_assert_eq(rill_tensor_numel(outs[c]), rill_tensor_numel(want), "%s output %zu", name, c);
      const float *g = rill_tensor_data(outs[c]), *w = rill_tensor_data(want);
      for (int64_t i = 0; i < rill_tensor_numel(want); i++)
        cr_assert(fabsf(g[i] - w[i]) <= 1e-5f + 1e-4f * fabsf(w[i]), "%s output %zu [%lld]: %g, want %g (run %d)",
                  name, c, (long long)i, g[i], w[i], round + 1);
      rill_tensor_destroy(want);
      rill_tensor_destroy(outs[c]);
    }
  }
  for (size_t i = 0; i < nfeeds; i++) rill_tensor_destroy(feeds[i]);
  rill_scope_destroy(scope);
  rill_executor_destroy(exe);
  rill_model_destroy(model);
}

Test(cuda_models, fit_a_line) { check_model("fit_a_line_raftliu"); }
Test(cuda_models, mnist_mlp) { check_model("mnist_mlp_handwriting"); }
Test(cuda_models, mnist_conv_bn) { check_model("mnist_conv_bn_etienne"); }
Test(cuda_models, luotao1_mlp) { check_model("luotao1_example_mlp_2018"); }
Test(cuda_models, abalone_bn_mlp) { check_model("abalone_bn_mlp"); }
Test(cuda_models, gesture_rec) { check_model("paddlejs_gesture_rec"); }
Test(cuda_models, paddlelite_simple) { check_model("paddlelite_simple_model"); }

/* Runs the `rill` command line; its exit status, its output (both streams) in out. */
static int rill_cli(const char *args, char *out, size_t cap) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s/rill' %s 2>&1", binary_dir(), args);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = '\0';
  return pclose(f);
}

/* rill run --device: a clear error without a device, the CPU's answer with one. */
Test(cuda_models, cli_device_option) {
  char why[512], args[1536], out[8192];
  bool missing = cuda_missing(why, sizeof why);
  snprintf(args, sizeof args,
           "run '%s/models/mnist_mlp_handwriting' --input '%s/models/mnist_mlp_handwriting/refs/input_image.npy'"
           " --device cuda:0", shared_dir(), shared_dir());
  int rc = rill_cli(args, out, sizeof out);
  if (missing) {
    cr_assert_neq(rc, 0, "%s", out);
    cr_assert(strstr(out, "--device cuda:0") && strstr(out, "place cuda:0 has no registered backend"), "%s", out);
  } else {
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "argmax per row: 3\n"), "%s", out);
  }
}

/* rill ops lists an op's CUDA kernels where the machine can use them. */
Test(cuda_models, cli_ops_lists_the_cuda_kernels) {
  char why[512], out[8192];
  bool missing = cuda_missing(why, sizeof why);
  cr_assert_eq(rill_cli("ops relu", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "  cpu: float32"), "%s", out);
  if (missing)
    cr_assert_null(strstr(out, "  cuda:"), "%s", out);
  else
    cr_assert(strstr(out, "  cuda: float32"), "%s", out);
}
