/* coexec: task affinity, nOS-V-compatible. */
#ifndef NOSV_AFFINITY_H
#define NOSV_AFFINITY_H

#include <stdint.h>

#include "nosv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Preferred affinity is a hint (other CPUs may steal the task); strict
 * affinity never runs the task elsewhere. */
typedef enum nosv_affinity_type {
	NOSV_AFFINITY_TYPE_PREFERRED,
	NOSV_AFFINITY_TYPE_STRICT
} nosv_affinity_type_t;

/* What `index` names: nothing, a system CPU id, a system NUMA node id, or a
 * user-defined set (accepted, treated as no affinity). */
typedef enum nosv_affinity_level {
	NOSV_AFFINITY_LEVEL_NONE,
	NOSV_AFFINITY_LEVEL_CPU,
	NOSV_AFFINITY_LEVEL_NUMA,
	NOSV_AFFINITY_LEVEL_USER_COMPLEX
} nosv_affinity_level_t;

/* nosv.h declares the typedef nosv_affinity_t for this struct. */
struct nosv_affinity {
	nosv_affinity_level_t level : 2;
	nosv_affinity_type_t type : 1;
	uint32_t index : 29;
};

/* Builds an affinity value; it needs no destruction. */
static inline nosv_affinity_t nosv_affinity_get(uint32_t index, nosv_affinity_level_t level,
                                                nosv_affinity_type_t type)
{
	nosv_affinity_t affinity;
	affinity.index = index;
	affinity.level = level;
	affinity.type = type;
	return affinity;
}

/* The task's affinity (level NONE when it has none). */
nosv_affinity_t nosv_get_task_affinity(nosv_task_t task);

/* Sets the affinity used at the next submit. An affinity that names a CPU or
 * NUMA node the instance does not manage is ignored with a warning. */
void nosv_set_task_affinity(nosv_task_t task, nosv_affinity_t *affinity);

/* The affinity new tasks get: none (level NONE), unless configured. */
nosv_affinity_t nosv_get_default_affinity(void);

#ifdef __cplusplus
}
#endif

#endif /* NOSV_AFFINITY_H */
