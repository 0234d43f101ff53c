/* save, load, save_combine, load_combine: Paddle's persistence ops (FORMATS.md sections
 * 2 and 3). Files are written crash-safely (temp file, fsync, rename, fsync of the
 * directory); reads check every length. Blocking: they run on the I/O pool. */
#include "operators/op_util.h"

static const rill_slot_schema save_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the variable to save (LoD tensor or selected rows)"},
};
static const rill_attr_schema save_attrs[] = {
    {"file_path", RILL_ATTR_STRING, RILL_ATTR_REQUIRED | RILL_ATTR_FILE_PATH, RILL_DEF_STRING(""),
     "file to write (its directories are created)"},
    {"overwrite", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "false: an existing file is an error"},
    {"save_as_fp16", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "store float32/float64 data as float16"},
};

const rill_op_schema rill_schema_save = {
    .type = "save",
    .doc = "Writes X to file_path as one Paddle tensor stream, crash-safely.",
    .inputs = save_inputs,
    .ninputs = RILL_COUNTOF(save_inputs),
    .outputs = NULL,
    .noutputs = 0,
    .attrs = save_attrs,
    .nattrs = RILL_COUNTOF(save_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_WRITES_FILES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema save_combine_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD, "the variables to save, in file order"},
};
static const rill_slot_schema save_combine_outputs[] = {
    {"Y", RILL_SLOT_DISPENSABLE, "the bytes, with save_to_memory (not supported)"},
};
static const rill_attr_schema save_combine_attrs[] = {
    {"file_path", RILL_ATTR_STRING, RILL_ATTR_FILE_PATH, RILL_DEF_STRING(""), "file to write"},
    {"overwrite", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "false: an existing file is an error"},
    {"save_as_fp16", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "store float32/float64 data as float16"},
    {"save_to_memory", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "write the bytes into output Y instead of a file (not supported)"},
};

const rill_op_schema rill_schema_save_combine = {
    .type = "save_combine",
    .doc = "Writes the X variables to file_path as concatenated tensor streams, crash-safely.",
    .inputs = save_combine_inputs,
    .ninputs = RILL_COUNTOF(save_combine_inputs),
    .outputs = save_combine_outputs,
    .noutputs = RILL_COUNTOF(save_combine_outputs),
    .attrs = save_combine_attrs,
    .nattrs = RILL_COUNTOF(save_combine_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_WRITES_FILES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema load_outputs[] = {
    {"Out", 0, "the loaded variable (LoD tensor, or selected rows when it holds them)"},
};
static const rill_attr_schema load_attrs[] = {
    {"file_path", RILL_ATTR_STRING, RILL_ATTR_REQUIRED | RILL_ATTR_FILE_PATH, RILL_DEF_STRING(""),
     "file to read"},
    {"load_as_fp16", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "convert float32/float64 data to float16"},
    {"seek", RILL_ATTR_LONG, 0, RILL_DEF_LONG(-1),
     "element offset of a partial load (only -1, the whole tensor, is supported)"},
};

const rill_op_schema rill_schema_load = {
    .type = "load",
    .doc = "Reads Out from file_path, which must hold exactly one tensor stream.",
    .inputs = NULL,
    .ninputs = 0,
    .outputs = load_outputs,
    .noutputs = RILL_COUNTOF(load_outputs),
    .attrs = load_attrs,
    .nattrs = RILL_COUNTOF(load_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_KERNEL_SHAPES | RILL_OP_READS_FILES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema load_combine_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE, "the loaded variables, in file order"},
};
static const rill_attr_schema load_combine_attrs[] = {
    {"file_path", RILL_ATTR_STRING, RILL_ATTR_FILE_PATH, RILL_DEF_STRING(""), "file to read"},
    {"load_as_fp16", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "convert float32/float64 data to float16"},
    {"model_from_memory", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "file_path holds the bytes themselves (not supported: string attributes end at the "
     "first NUL byte, and every tensor stream starts with four)"},
};

const rill_op_schema rill_schema_load_combine = {
    .type = "load_combine",
    .doc = "Reads the Out variables from file_path, one tensor stream each in order; the "
           "file must end after the last.",
    .inputs = NULL,
    .ninputs = 0,
    .outputs = load_combine_outputs,
    .noutputs = RILL_COUNTOF(load_combine_outputs),
    .attrs = load_combine_attrs,
    .nattrs = RILL_COUNTOF(load_combine_attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_KERNEL_SHAPES | RILL_OP_READS_FILES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(save_load);
