/* Schema questions asked by bindings (rill.h, "program support"). */
#include <string.h>

#include "framework/base/isa.h"
#include "framework/registry/registry.h"
#include "rill.h"

bool rill_op_has_attribute(const char *type, const char *attr) {
  if (!type || !attr || rill_registry_init_quiet()) return false; /* true: tables failed */
  const rill_op_schema *s = rill_schema_find(type);
  if (!s) return false;
  for (size_t i = 0; i < s->nattrs; i++)
    if (strcmp(s->attrs[i].name, attr) == 0) return true;
  return false;
}

#define RILL_STR_(x) #x
#define RILL_STR(x) RILL_STR_(x)

const char *rill_version(void) {
  return RILL_STR(RILL_VERSION_MAJOR) "." RILL_STR(RILL_VERSION_MINOR) "." RILL_STR(
      RILL_VERSION_PATCH);
}

unsigned rill_version_number(void) { return RILL_VERSION_NUMBER; }

const char *rill_cpu_isa(void) { return rill_cpu_isa_level_name(rill_cpu_isa_level_get()); }
