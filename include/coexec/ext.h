/* coexec: C extensions beyond the nOS-V API, for runtime adapters.
 *
 * These exist because adapters re-host threads that block in places coexec
 * does not control (a pthread condition variable, a join, a read). */
#ifndef COEXEC_EXT_H
#define COEXEC_EXT_H

#include <nosv.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A nosv_attach() flag for threads that also run application code (an
 * OpenMP root thread, say). Whenever such a thread is outside coexec (after
 * coexec_block_enter() or coexec_lend_cpu(), and after nosv_detach() unless
 * NOSV_DETACH_NO_RESTORE_AFFINITY keeps the kernel mask it had) it runs with
 * the affinity it had chosen, and threads it creates inherit that; a mask it
 * sets there applies at once. While it holds a CPU it runs there: coexec
 * pins it to that CPU only when the kernel has it on another one (and, once
 * pinned, moves it to each CPU it is granted until it leaves coexec), and a
 * mask set meanwhile is applied when it next leaves the CPU
 * (docs/affinity.md). */
#define COEXEC_ATTACH_KEEP_AFFINITY ((nosv_flags_t)1 << 31)

/* Gives the calling task's CPU away before the thread blocks outside coexec
 * (in a condition variable, a join, a syscall). Until coexec_block_exit() the
 * task holds no CPU and is not ready, and a mask the thread sets on itself
 * reaches the kernel too (the next grant binds it again). Only from a task; calls do not nest:
 * until coexec_block_exit() the thread is outside coexec, and this call,
 * coexec_lend_cpu(), coexec_keep_cpu(), the scheduling points and BLOCKING or
 * INLINE submits return NOSV_ERR_OUTSIDE_TASK. */
int coexec_block_enter(void);

/* Like coexec_block_enter(), for a thread about to run code of its own that
 * may be short or may block: it stays bound to its CPU and runs there until
 * any process that needs a CPU takes it; from then on it may run on every
 * managed CPU. Ends with coexec_block_exit(), which is cheap (no hand-off, no
 * wake-up) when the CPU was not taken. Meanwhile the thread stays bound: a
 * mask it sets is only remembered (for detach), unless it was attached with
 * COEXEC_ATTACH_KEEP_AFFINITY (then it runs with its own affinity
 * throughout). Only from a task; calls do not nest. */
int coexec_lend_cpu(void);

/* Like coexec_lend_cpu(), but the CPU stays the caller's while the thread
 * runs code of its own, whatever other work waits: coexec takes it only when
 * the thread has stayed outside coexec for a while (two looks of a process
 * monitor, at least a millisecond apart; tens of milliseconds in practice)
 * and some process waits for a CPU. For short stretches of serial code
 * between parallel regions that may, rarely, block. Ends with
 * coexec_block_exit(), which is one atomic operation when the CPU was not
 * taken. Only from a task; calls do not nest. */
int coexec_keep_cpu(void);

/* For a thread outside coexec that is about to block in a wait of its own
 * (a host thread in clFinish, say): a CPU it keeps after coexec_keep_cpu()
 * is lent from now on, as after coexec_lend_cpu(), so work that waits for a
 * CPU takes it at once instead of after the keep's grace period. After
 * coexec_lend_cpu() or coexec_block_enter() there is nothing to do. The
 * matching coexec_block_exit() is unchanged. Returns NOSV_SUCCESS when the
 * thread is outside coexec (between one of those three calls and
 * coexec_block_exit()), NOSV_ERR_INVALID_OPERATION when it holds a CPU, and
 * NOSV_ERR_OUTSIDE_TASK outside a task. */
int coexec_lend_kept_cpu(void);

/* Waits for a CPU again after coexec_block_enter(), coexec_lend_cpu() or
 * coexec_keep_cpu() and binds the thread to it. Returns
 * NOSV_ERR_INVALID_OPERATION without a matching enter. */
int coexec_block_exit(void);

/* Who has ready coexec work that could run on the caller's CPU right now:
 * 0 when no one, else COEXEC_CPU_WANTED_HERE (the caller's process) and/or
 * COEXEC_CPU_WANTED_ELSEWHERE (another process). Relaxed reads: cheap enough
 * for spin loops, and a hint only. Returns 0 outside a task. */
#define COEXEC_CPU_WANTED_HERE 1
#define COEXEC_CPU_WANTED_ELSEWHERE 2
int coexec_cpu_wanted(void);

/* Stores in *spare how many more coexec threads could run right now
 * without making any wait: the managed CPUs that any work could claim now
 * (free, held idle by a worker that looks for work, or lent by a thread in
 * serial code, which the claim evicts) less the ready work, of every
 * process, that waits for a CPU. Negative when work waits. A relaxed
 * snapshot for sizing decisions (how many threads a parallel region should
 * use), stale as soon as it returns. From any thread of a process joined to
 * coexec. */
int coexec_spare_cpus(int *spare);

/* Stores in *ns the scheduler's quantum (scheduler.quantum_ns of the
 * segment): how long a process keeps a CPU that another process waits for.
 * Runtimes that take turns among their own threads may use the same length.
 * Returns NOSV_ERR_NOT_INITIALIZED before nosv_init() and
 * NOSV_ERR_INVALID_PARAMETER for a null `ns`. */
int coexec_quantum(uint64_t *ns);

/* Fills the `size` bytes at `mask` (a cpu_set_t) with the calling thread's
 * visible mask: what sched_getaffinity(0, ...) answers when libcoexec comes
 * before libc in the lookup order (see nosv_attach()). For a thread coexec
 * pinned to the CPU it holds, that is the mask the thread had or set outside
 * coexec, not the pin; for any other thread, the kernel's mask. For runtimes
 * that read their thread's mask with the system call, whatever the library
 * order (libomp sizes its default team by that mask). Returns 0 or an errno
 * value: EINVAL when `size` is smaller than the kernel's masks, EFAULT for a
 * null `mask`. Callable before nosv_init() and from any thread. */
int coexec_visible_affinity(size_t size, void *mask);

/* Inside a call that libcoexec forwards to the next definition, the return
 * address of the program's call; NULL anywhere else. libcoexec defines
 * pthread_create (a thread that coexec pinned creates threads that start
 * from its visible mask, see docs/affinity.md) and the C library's blocking
 * calls (where a program thread that coexec hosts gives its CPU away, see
 * docs/threads.md), so a later interposer that tells its callers apart by
 * that address (the PoCL adapter) asks here first. */
const void *coexec_interposed_caller(void);

/* For an adapter that manages the waits of a runtime library itself (the
 * PoCL adapter, PoCL's): libcoexec's wrappers of the C library's blocking
 * calls leave the calls made from the loaded object that contains
 * `address` (a return address, say) to the adapter from now on, as they do
 * those of libcoexec and of the adapters' own libraries. Returns
 * NOSV_SUCCESS, or NOSV_ERR_INVALID_PARAMETER when no loaded object
 * contains `address`. */
int coexec_leave_blocking_calls_from(const void *address);

/* The same as coexec_interposed_caller(), by its older name, which only
 * pthread_create() answered. */
const void *coexec_pthread_create_caller(void);

/* Nonzero when this process is joined to a coexec instance (nosv_init()
 * succeeded and the last nosv_shutdown() has not run yet). */
int coexec_is_active(void);

/* Like nosv_init(), but prints nothing when it fails: the reason is kept
 * for coexec_last_error(). For adapters, which report a failure in one line
 * of their own. The init belongs to the process, not to the calling thread:
 * the matching nosv_shutdown() may come from any thread (an adapter starts
 * coexec on whichever thread first needs it and stops it at exit). */
int coexec_init_quiet(void);

/* Why the last nosv_init() or coexec_init_quiet() of this process failed,
 * in words ("" when it did not). Valid until the next init call. */
const char *coexec_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* COEXEC_EXT_H */
