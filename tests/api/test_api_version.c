/* The public API's versioning: the runtime version query, and the struct_size member
 * every options struct starts with. Uses only rill.h, as an application would. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "rill.h"

static void expect_invalid(rill_status *st, const char *needle) {
  cr_assert_not_null(st, "expected INVALID_ARGUMENT containing '%s'", needle);
  cr_expect_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  cr_expect(strstr(rill_status_message(st), needle), "message '%s' lacks '%s'",
            rill_status_message(st), needle);
  rill_status_destroy(st);
}

Test(api, version_matches_the_project_and_the_header) {
  cr_assert_str_eq(rill_version(), RILL_PROJECT_VERSION);
  char header[32];
  snprintf(header, sizeof header, "%d.%d.%d", RILL_VERSION_MAJOR, RILL_VERSION_MINOR,
           RILL_VERSION_PATCH);
  cr_assert_str_eq(rill_version(), header);
  cr_assert_eq(rill_version_number(), (unsigned)RILL_VERSION_NUMBER);
  cr_assert_eq(rill_version_number(), ((unsigned)RILL_VERSION_MAJOR << 16) |
                                          ((unsigned)RILL_VERSION_MINOR << 8) |
                                          (unsigned)RILL_VERSION_PATCH);
}

Test(api, executor_options_initializers_agree) {
  rill_executor_options a = RILL_EXECUTOR_OPTIONS_INIT, b = rill_executor_default_options();
  cr_assert_eq(a.struct_size, sizeof(rill_executor_options));
  cr_assert_eq(b.struct_size, sizeof(rill_executor_options));
  cr_assert_eq(a.place.device, RILL_DEVICE_CPU);
  cr_assert_eq(b.num_threads, 0);
  a.num_threads = 2;
  rill_executor *e = NULL;
  rill_status *st = rill_executor_create(&a, &e);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_executor_destroy(e);
}

Test(api, executor_refuses_an_unknown_struct_size) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  rill_executor *e = NULL;
  o.struct_size = 0;
  expect_invalid(rill_executor_create(&o, &e), "struct_size is 0");
  o.struct_size = (uint32_t)sizeof o - 1;
  expect_invalid(rill_executor_create(&o, &e), "rill_executor_options: struct_size");
  o.struct_size = (uint32_t)sizeof o + 8;
  expect_invalid(rill_executor_create(&o, &e), "not one this library");
  cr_assert_null(e, "no executor on error");
}

Test(api, checkpoint_options_initializers_agree) {
  rill_checkpoint_options a = RILL_CHECKPOINT_OPTIONS_INIT, b = rill_checkpoint_default_options();
  cr_assert_eq(a.struct_size, sizeof(rill_checkpoint_options));
  cr_assert_eq(b.struct_size, a.struct_size);
  cr_assert_eq(a.every_n_steps, b.every_n_steps);
  cr_assert_eq(a.every_n_seconds, b.every_n_seconds);
  cr_assert_eq(a.skip_when_busy, b.skip_when_busy);
  cr_assert_eq(a.max_to_keep, 3);
  cr_assert_eq(b.max_to_keep, 3);
  rill_checkpoint_manager *m = NULL;
  rill_status *st = rill_checkpoint_manager_create("ckpt", &a, &m);
  cr_assert_null(st, "%s", rill_status_message(st));
  a.max_to_keep = 5;
  st = rill_checkpoint_manager_configure(m, &a);
  cr_assert_null(st, "%s", rill_status_message(st));
  rill_checkpoint_manager_destroy(m);
}

Test(api, checkpoint_refuses_an_unknown_struct_size) {
  rill_checkpoint_options o = rill_checkpoint_default_options();
  rill_checkpoint_manager *m = NULL;
  o.struct_size = 0;
  expect_invalid(rill_checkpoint_manager_create("ckpt", &o, &m), "struct_size is 0");
  o.struct_size = 4;
  expect_invalid(rill_checkpoint_manager_create("ckpt", &o, &m), "rill_checkpoint_options");
  cr_assert_null(m, "no manager on error");
  rill_checkpoint_options good = rill_checkpoint_default_options();
  rill_status *st = rill_checkpoint_manager_create("ckpt", &good, &m);
  cr_assert_null(st, "%s", rill_status_message(st));
  o.struct_size = (uint32_t)sizeof o * 2;
  expect_invalid(rill_checkpoint_manager_configure(m, &o), "not one this library");
  rill_checkpoint_manager_destroy(m);
}
