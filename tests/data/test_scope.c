#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "framework/data/scope.h"

Test(scope, find_walks_parent) {
  rill_scope *root, *child;
  cr_assert_null(rill_scope_create(NULL, &root));
  cr_assert_null(rill_scope_create(root, &child));
  rill_variable *v;
  cr_assert_null(rill_scope_var(root, "w", &v));
  cr_assert_eq(rill_scope_find(child, "w"), v);
  cr_assert_null(rill_scope_find_local(child, "w"));
  cr_assert_null(rill_scope_find(root, "nope"));
  rill_scope_destroy(root); /* destroys the child too */
}

/* Plans keep variable pointers while the scope's serial and the erasure count stand
 * still: a scope made at a freed scope's address has a new serial, and an erasure in any
 * scope moves the count. */
Test(scope, serials_are_unique_and_erasures_counted) {
  rill_scope *a, *b;
  cr_assert_null(rill_scope_create(NULL, &a));
  uint64_t first = rill_scope_serial(a);
  cr_assert_neq(first, 0);
  rill_scope_destroy(a);
  cr_assert_null(rill_scope_create(NULL, &b));
  cr_assert_neq(rill_scope_serial(b), first, "a new scope, maybe at the old address");
  rill_variable *v;
  cr_assert_null(rill_scope_var(b, "x", &v));
  uint64_t erased = rill_scope_erasures();
  cr_assert_not(rill_scope_erase(b, "absent"));
  cr_assert_eq(rill_scope_erasures(), erased, "nothing erased, nothing counted");
  cr_assert(rill_scope_erase(b, "x"));
  cr_assert_gt(rill_scope_erasures(), erased);
  rill_scope_destroy(b);
}

Test(scope, child_destroy_detaches_from_parent) {
  rill_scope *root, *a, *b;
  cr_assert_null(rill_scope_create(NULL, &root));
  cr_assert_null(rill_scope_create(root, &a));
  cr_assert_null(rill_scope_create(root, &b));
  rill_scope_destroy(a);
  cr_assert_eq(root->first_child, b);
  cr_assert_null(b->next_sibling);
  rill_scope_destroy(root);
}

Test(scope, var_is_stable_and_unique) {
  rill_scope *s;
  cr_assert_null(rill_scope_create(NULL, &s));
  rill_variable *first, *again;
  cr_assert_null(rill_scope_var(s, "x", &first));
  char name[32];
  for (int i = 0; i < 1000; i++) { /* forces several rehashes */
    rill_variable *v;
    snprintf(name, sizeof name, "v%d", i);
    cr_assert_null(rill_scope_var(s, name, &v));
  }
  cr_assert_null(rill_scope_var(s, "x", &again));
  cr_assert_eq(first, again);
  cr_assert_eq(rill_scope_size(s), 1001);
  rill_scope_destroy(s);
}

Test(scope, erase_keeps_other_lookups_working) {
  rill_scope *s;
  cr_assert_null(rill_scope_create(NULL, &s));
  char name[32];
  for (int i = 0; i < 200; i++) {
    rill_variable *v;
    snprintf(name, sizeof name, "n%d", i);
    cr_assert_null(rill_scope_var(s, name, &v));
    rill_tensor *t = rill_variable_tensor(v);
    rill_dims d = {1, {i + 1}};
    cr_assert_null(rill_tensor_alloc(t, RILL_DTYPE_FP32, &d));
  }
  for (int i = 0; i < 200; i += 2) {
    snprintf(name, sizeof name, "n%d", i);
    cr_assert(rill_scope_erase(s, name));
  }
  cr_assert_not(rill_scope_erase(s, "n0"));
  for (int i = 0; i < 200; i++) {
    snprintf(name, sizeof name, "n%d", i);
    rill_variable *v = rill_scope_find_local(s, name);
    if (i % 2) {
      cr_assert_not_null(v, "%s lost after erasing its neighbours", name);
      cr_assert_eq(rill_tensor_numel(&v->u.tensor), i + 1);
    } else {
      cr_assert_null(v);
    }
  }
  cr_assert_eq(rill_scope_size(s), 100);
  rill_scope_destroy(s);
}

Test(variable, kinds_do_not_mix) {
  rill_variable v;
  rill_variable_init(&v);
  cr_assert_not_null(rill_variable_array(&v));
  cr_assert_null(rill_variable_tensor(&v), "an array variable has no dense tensor");
  cr_assert_null(rill_tensor_array_resize(&v.u.array, 3));
  cr_assert_eq(v.u.array.n, 3);
  cr_assert_str_eq(rill_var_kind_name(v.kind), "tensor array");
  rill_variable_clear(&v);
  cr_assert_eq(v.kind, RILL_VARKIND_EMPTY);
  cr_assert_not_null(rill_variable_selected_rows(&v));
  rill_variable_clear(&v);
}

typedef struct {
  rill_scope *s;
  int id;
} worker_arg;

static void *worker(void *p) {
  worker_arg *a = p;
  char name[32];
  for (int i = 0; i < 500; i++) {
    rill_variable *v;
    snprintf(name, sizeof name, "shared%d", i % 50);
    if (rill_scope_var(a->s, name, &v)) return (void *)1;
    snprintf(name, sizeof name, "own%d_%d", a->id, i);
    if (rill_scope_var(a->s, name, &v)) return (void *)1;
    if (!rill_scope_find(a->s, name)) return (void *)1;
  }
  return NULL;
}

Test(scope, concurrent_creation_is_safe) {
  rill_scope *s;
  cr_assert_null(rill_scope_create(NULL, &s));
  pthread_t th[4];
  worker_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (worker_arg){s, i};
    pthread_create(&th[i], NULL, worker, &args[i]);
  }
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    cr_assert_null(r);
  }
  cr_assert_eq(rill_scope_size(s), 50 + 4 * 500);
  rill_scope_destroy(s);
}
