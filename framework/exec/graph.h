/* The dependency graph of the parallel schedule, built once per plan. Internal to the
 * executor (see plan.h). */
#ifndef RILL_FRAMEWORK_EXEC_GRAPH_H
#define RILL_FRAMEWORK_EXEC_GRAPH_H

#include "framework/exec/plan.h"

/* Builds the graph of a plan whose ops and variables are laid out (read-after-write,
 * write-after-read, write-after-write; side-effect ops and random ops each in program
 * order), the critical path, the schedule AUTO picks, the memory plan when the plan
 * has one, and the per-op lists of temporaries released after their last use. */
rill_status *rill_plan_build_graph(rill_plan *p, name_table *names, const rill_program *prog,
                                   const rill_block_desc *bd, int32_t nthreads);

#endif
