/* Slot and attribute positions of set_value, shared by the schema and the kernel. */
#ifndef RILL_OPERATORS_SET_VALUE_H
#define RILL_OPERATORS_SET_VALUE_H

enum { SV_IN_INPUT, SV_IN_VALUE, SV_IN_STARTS, SV_IN_ENDS, SV_IN_STEPS };
enum { SV_A_AXES, SV_A_STARTS, SV_A_ENDS, SV_A_STEPS, SV_A_DECREASE, SV_A_NONE, SV_A_DTYPE,
       SV_A_SHAPE, SV_A_BOOL, SV_A_FP32, SV_A_INT32, SV_A_INT64, SV_A_FP64 };

#endif
