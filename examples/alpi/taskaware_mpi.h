/* taskaware_mpi: waits for non-blocking MPI requests inside tasks without
 * holding a CPU, in the style of BSC's TAMPI, built on ALPI 1.2 alone
 * (<nosv/alpi.h>) so that it runs on any runtime that provides ALPI.
 *
 * Two ways to wait, both callable from a task of the runtime:
 *   ta_mpi_wait / ta_mpi_waitall  block the calling task (alpi_task_block)
 *       until a polling task sees the requests complete and unblocks it;
 *       the task's CPU runs other tasks meanwhile.
 *   ta_mpi_iwait / ta_mpi_iwaitall  return at once; the requests become
 *       events of the calling task (alpi_task_events_increase), so the task
 *       completes (and its completion callback runs) only once they are
 *       done. The request buffers must stay untouched until then.
 * Outside a task, each call falls back to MPI_Wait/MPI_Waitall.
 *
 * MPI must be initialised with MPI_THREAD_MULTIPLE: the polling task tests
 * requests while other tasks post new ones. */
#ifndef TASKAWARE_MPI_H
#define TASKAWARE_MPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts the polling task (a task spawned through ALPI that tests the
 * pending requests every `poll_us` microseconds, or TA_MPI_POLL_US from the
 * environment when poll_us is 0; default 50). Call after nosv_init (or the
 * runtime's own init) and MPI_Init_thread. Returns MPI_SUCCESS, or
 * MPI_ERR_OTHER with a message on stderr (ALPI too old or missing a
 * feature, MPI without MPI_THREAD_MULTIPLE, already started). */
int ta_mpi_init(unsigned poll_us);

/* Stops the polling task and waits until it has completed. Every request
 * passed to the ta_mpi_* calls must have completed (the tasks that wait for
 * them, too). Call before MPI_Finalize. */
int ta_mpi_finalize(void);

/* Blocks the calling task until `request` completes; the status goes to
 * `status` (MPI_STATUS_IGNORE allowed) and *request becomes
 * MPI_REQUEST_NULL, as with MPI_Wait. */
int ta_mpi_wait(MPI_Request *request, MPI_Status *status);

/* As ta_mpi_wait, for `count` requests (statuses may be
 * MPI_STATUSES_IGNORE). */
int ta_mpi_waitall(int count, MPI_Request requests[], MPI_Status statuses[]);

/* Binds `request` to the calling task: returns at once, and the task does
 * not complete before the request does. *request becomes MPI_REQUEST_NULL
 * (the library owns it now); `status`, unless MPI_STATUS_IGNORE, is filled
 * in when it completes and must stay valid until then. */
int ta_mpi_iwait(MPI_Request *request, MPI_Status *status);

/* As ta_mpi_iwait, for `count` requests. */
int ta_mpi_iwaitall(int count, MPI_Request requests[], MPI_Status statuses[]);

#ifdef __cplusplus
}
#endif

#endif /* TASKAWARE_MPI_H */
