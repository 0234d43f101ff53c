/* The memory plan: temporaries whose lifetimes do not overlap share one buffer. Internal
 * to the executor (see plan.h). */
#ifndef RILL_FRAMEWORK_EXEC_MEMPLAN_H
#define RILL_FRAMEWORK_EXEC_MEMPLAN_H

#include "framework/exec/plan.h"

/* Groups the plan's temporaries (p->group, p->holders, p->ngroups). `subs` lists, per
 * op, the resources its sub-blocks name; the edges the handover needs are appended to
 * efrom/eto (`stamp`, one entry per op, deduplicates them). False when out of memory. */
bool rill_plan_memory(rill_plan *p, const u32vec *subs, u32vec *efrom, u32vec *eto,
                      uint32_t *stamp);

#endif
