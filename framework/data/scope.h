/* Variables (typed holders) and scopes (name -> variable, with a parent chain). */
#ifndef RILL_FRAMEWORK_DATA_SCOPE_H
#define RILL_FRAMEWORK_DATA_SCOPE_H

#include <pthread.h>

#include "framework/base/strmap.h"
#include "framework/data/tensor.h"

typedef enum rill_var_kind {
  RILL_VARKIND_EMPTY = 0,
  RILL_VARKIND_TENSOR,        /* LoD tensor */
  RILL_VARKIND_SELECTED_ROWS, /* sparse rows */
  RILL_VARKIND_TENSOR_ARRAY,  /* feed/fetch lists, LoD tensor arrays */
  RILL_VARKIND_STEP_SCOPES,   /* scopes kept by sub-block ops for their gradients */
  RILL_VARKIND_COUNT
} rill_var_kind;

typedef struct rill_tensor_array {
  rill_tensor *items;
  size_t n, cap;
} rill_tensor_array;

struct rill_scope;

/* Paddle's STEP_SCOPES: the scopes a sub-block op (conditional_block, while) ran its
 * block in, kept for its gradient op. The variable owns them: clearing it destroys
 * them. */
typedef struct rill_step_scopes {
  struct rill_scope **items;
  size_t n, cap;
} rill_step_scopes;

typedef struct rill_variable {
  rill_var_kind kind;
  union {
    rill_tensor tensor;
    rill_selected_rows rows;
    rill_tensor_array array;
    rill_step_scopes scopes;
  } u;
} rill_variable;

void rill_variable_init(rill_variable *v);
/* Releases the contents; the variable becomes EMPTY. */
void rill_variable_clear(rill_variable *v);
const char *rill_var_kind_name(rill_var_kind kind);
/* The dense tensor, turning an EMPTY variable into a TENSOR one; NULL when the variable
 * holds another kind. */
rill_tensor *rill_variable_tensor(rill_variable *v);
rill_selected_rows *rill_variable_selected_rows(rill_variable *v);
rill_tensor_array *rill_variable_array(rill_variable *v);
/* The step scopes, turning an EMPTY variable into a STEP_SCOPES one; NULL when the
 * variable holds another kind. */
rill_step_scopes *rill_variable_step_scopes(rill_variable *v);
/* Appends a scope the variable then owns; on error the caller still owns it. */
rill_status *rill_step_scopes_push(rill_step_scopes *s, struct rill_scope *scope);
/* Grows (never shrinks) an array variable to at least n items. */
rill_status *rill_tensor_array_resize(rill_tensor_array *a, size_t n);

typedef struct rill_scope_entry rill_scope_entry;

struct rill_scope {
  rill_scope *parent;
  rill_scope *first_child, *next_sibling;
  pthread_mutex_t lock;
  rill_strmap vars; /* name (borrowed from the entry) -> rill_scope_entry */
  uint64_t serial;  /* unique in the process, never 0: tells a new scope at an old address */
};

/* The scope's serial and a count of the erasures in every scope: a plan that bound its
 * variables in a scope with the same serial, with no erasure since, still holds valid
 * pointers (variables never move, and a scope's ancestors outlive it). */
uint64_t rill_scope_serial(const rill_scope *s);
uint64_t rill_scope_erasures(void);

/* Finds `name` in this scope only / through the parent chain; NULL when absent. */
rill_variable *rill_scope_find_local(rill_scope *s, const char *name);
rill_variable *rill_scope_find(rill_scope *s, const char *name);
/* Finds `name` in this scope or creates an EMPTY variable there. Variables never move:
 * the pointer stays valid until the variable is erased or the scope destroyed. */
rill_status *rill_scope_var(rill_scope *s, const char *name, rill_variable **out);
/* Removes and frees a local variable; false when absent. */
bool rill_scope_erase(rill_scope *s, const char *name);
/* Calls fn for each local variable, in unspecified order. */
void rill_scope_each(rill_scope *s, void (*fn)(const char *name, rill_variable *v, void *ctx),
                     void *ctx);
size_t rill_scope_size(rill_scope *s);
/* Scopes created and not yet destroyed, process-wide (tests check that kept step scopes
 * do not pile up across runs). */
size_t rill_scope_live_count(void);

#endif
