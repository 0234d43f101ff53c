/* Shape inference for plugin ops in tests: Out (slot 0, item 0) gets the dtype, dims and
 * LoD of X (slot 0, item 0). */
#ifndef RILL_TESTS_SUPPORT_PLUGIN_INFER_H
#define RILL_TESTS_SUPPORT_PLUGIN_INFER_H

#include "rill.h"

rill_status *plugin_infer_same(rill_op_context *ctx, void *user);

#endif
