/* coexec: nOS-V's memory information calls (nOS-V 4.1 nosv/memory.h).
 *
 * They describe the instance's shared segment, so that a runtime can throttle
 * itself before the segment is full. coexec's segment holds no tasks (tasks
 * live in each process): it is fixed tables of CPUs, processes and threads,
 * and what fills up is the process and thread tables. Callable from any
 * thread once nosv_init() succeeded (NOSV_ERR_NOT_INITIALIZED before). A NULL
 * out-pointer is NOSV_ERR_INVALID_PARAMETER. */
#ifndef NOSV_MEMORY_H
#define NOSV_MEMORY_H

#include <sys/types.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An upper bound of the segment bytes in use: its header and CPU table, plus
 * the process and thread slots that live members hold now. */
int nosv_memory_get_used(size_t *used);

/* The segment's total size in bytes (fixed when it is created). */
int nosv_memory_get_size(size_t *size);

/* How close the segment is to full, from 0 (empty) to 1 (full): the fill
 * ratio of its fuller table (process slots or thread slots), since a full
 * table is what makes nosv_init, nosv_attach or a new worker fail. */
int nosv_memory_get_pressure(float *pressure);

#ifdef __cplusplus
}
#endif

#endif /* NOSV_MEMORY_H */
