/* Every built-in op schema, from ops.def: the registry adds these when it builds its
 * tables (framework/registry/registry.h). */
#include "framework/registry/registry.h"

#define RILL_OP(name) extern const rill_op_schema rill_schema_##name;
#include "operators/ops.def"
#undef RILL_OP

const rill_op_schema *const rill_builtin_schemas[] = {
#define RILL_OP(name) &rill_schema_##name,
#include "operators/ops.def"
#undef RILL_OP
};
const size_t rill_builtin_schema_count = RILL_COUNTOF(rill_builtin_schemas);
