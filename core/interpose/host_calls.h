/* libcoexec's side of hosting program threads, for its preload library
 * libcoexec-host.so (core/host/, docs/threads.md). Exported by libcoexec,
 * not installed: not an API for anyone else.
 *
 * The C library's blocking calls are wrapped in that separate library,
 * which only `coexec run` preloads and nothing links against. Were they in
 * libcoexec, a library linked against libcoexec (a runtime, an adapter)
 * would have its references to them bound at link time to libcoexec's
 * unversioned definitions; loaded where libc comes first, such a reference
 * then binds to libc's oldest version of the symbol (pthread_cond_wait's
 * is the old condition variable of GLIBC_2.2.5), not to the current one. */
#ifndef COEXEC_CORE_HOST_CALLS_H
#define COEXEC_CORE_HOST_CALLS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The calling thread, attached, becomes a program thread that coexec hosts
 * (the main thread): the preemption safety net may give its CPU to work of
 * its own process too, and its monitor lends its CPU while it sleeps where
 * no wrapper sees it. Notes the code of libcoexec and of everything under a
 * `coexec/` directory (the adapters, libcoexec-host.so), whose calls the
 * wrappers leave alone. Returns a nosv error code. */
int coexec_host_this_thread(void);

/* Before the hosted thread detaches. */
void coexec_unhost_this_thread(void);

/* What a wrapped call made from `caller` (a return address) is:
 * COEXEC_HOST_PROGRAM when it is the program's own call on a hosted program
 * thread, in the program's code (not inside coexec, nor from libcoexec, an
 * adapter or a runtime whose waits an adapter manages); COEXEC_HOST_LOCKER
 * when it comes, from such code, from any thread that holds a coexec CPU
 * (or lent it while asleep), in a process that hosts its main thread: its
 * lock waits give the CPU away too. 0 otherwise. */
#define COEXEC_HOST_PROGRAM 1
#define COEXEC_HOST_LOCKER 2
int coexec_host_call(const void* caller);

/* Whether a thread that the program starts from `caller` (the return
 * address of its pthread_create call) should be hosted too, under
 * COEXEC_HOST_THREADS=all: 1 when this process hosts its main thread and
 * the call is the program's own (not from inside coexec, nor from
 * libcoexec, an adapter or a runtime whose threads an adapter hosts).
 * Their threads are the adapters' to host. 0 otherwise. */
int coexec_host_new_thread(const void* caller);

/* Takes back the CPU that the calling thread lent or kept, only if that
 * needs no wait; 1 when it did, 0 when the CPU was taken meanwhile (the
 * thread is still outside coexec). */
int coexec_host_reclaim_cpu(void);

/* 1, once, when the calling thread lent its CPU from its signal handler
 * while asleep where no wrapper saw it, and has not taken one back since:
 * the blocking call about to start is already outside coexec, and its end
 * takes a CPU back (coexec_block_exit()). */
int coexec_host_take_lent_asleep(void);

/* The calling thread's slot for coexec_interposed_caller(): the wrappers
 * store the program's return address there for the length of the call they
 * forward. */
const void** coexec_host_caller_slot(void);

#ifdef __cplusplus
}
#endif

#endif
