/* `rill ops [NAME]`: the registered operators (or one) and their schemas. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int describe(const char *name) {
  char *text = NULL;
  rill_status *st = rill_op_describe(name, &text);
  if (st) return fail(st);
  if (!text) return fail(rill_status_create(RILL_NOT_FOUND, "unknown op '%s'", name));
  fputs(text, stdout);
  if (text[0] && text[strlen(text) - 1] != '\n') putchar('\n');
  rill_free_buffer(text);
  return EXIT_OK;
}

int cmd_ops(int argc, char **argv) {
  if (argc > 1) return usage_error("ops takes at most one NAME%s", "");
  /* Each op lists its kernels by backend: load the CUDA backend when this machine can
   * use it, so that its kernels are listed too. Without a device there is nothing to
   * list, and nothing to report. */
  int32_t devices = 0;
  rill_status_destroy(rill_cuda_device_count(&devices));
  if (argc == 1) return describe(argv[0]);
  size_t n = rill_op_count();
  if (n == 0) return fail(rill_status_create(RILL_INTERNAL, "the operator tables could not be built"));
  printf("%zu operators\n\n", n);
  for (size_t i = 0; i < n; i++) {
    int rc = describe(rill_op_name(i));
    if (rc) return rc;
    putchar('\n');
  }
  return EXIT_OK;
}
