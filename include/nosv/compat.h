/* coexec: nOS-V 4.1's pthread-style blocking primitives (nosv/compat.h).
 *
 * Mutexes, condition variables, barriers and read-write locks that block
 * the calling *task*, not its thread: a task that must wait leaves its CPU,
 * which runs other work meanwhile, and the task resumes once the object lets
 * it through. A pthread primitive would instead hold the CPU, idle, until it
 * returned (and deadlock when the holder needs that CPU to let it through).
 *
 * Return values are POSIX error numbers (0, EINVAL, EBUSY, EPERM, ...),
 * not nosv error codes, so that these calls replace the pthread ones one for
 * one.
 *
 * As nOS-V documents: the calls that lock, unlock or wait need a task
 * context (a running task, or a thread attached with nosv_attach()) and
 * return ESRCH outside one; those that may wait return EINVAL from a task
 * that cannot be blocked (one execution of a parallel task). Signalling,
 * init and destroy work from any thread. A task whose thread is outside
 * coexec (between coexec_block_enter() and coexec_block_exit()) holds no
 * CPU to give away and blocks its thread instead.
 *
 * The objects are private to the process (not for shared memory), and hold
 * no resources: destroying one only checks that it is idle. A task blocked
 * in these calls must not be resumed with nosv_submit() by anyone else. */
#ifndef NOSV_COMPAT_H
#define NOSV_COMPAT_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "nosv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Opaque objects ---------------------------------------------------- */

#define SIZEOF_NOSV_MUTEX 64
#define SIZEOF_NOSV_BARRIER 64
#define SIZEOF_NOSV_COND 64
#define SIZEOF_NOSV_RWLOCK 64
#define SIZEOF_NOSV_MUTEXATTR 32
#define SIZEOF_NOSV_BARRIERATTR 32
#define SIZEOF_NOSV_CONDATTR 32
#define SIZEOF_NOSV_RWLOCKATTR 32

/* A mutex. All-zero bytes (NOSV_MUTEX_INITIALIZER) are an unlocked one. */
typedef union nosv_mutex_ext {
	uint8_t __pad[SIZEOF_NOSV_MUTEX];
	uint64_t __align;
} nosv_mutex_t;

/* A barrier; needs nosv_barrier_init(). */
typedef union nosv_barrier_ext {
	uint8_t __pad[SIZEOF_NOSV_BARRIER];
	uint64_t __align;
} nosv_barrier_t;

/* A condition variable. All-zero bytes (NOSV_COND_INITIALIZER) are a ready one. */
typedef union nosv_cond_ext {
	uint8_t __pad[SIZEOF_NOSV_COND];
	uint64_t __align;
} nosv_cond_t;

/* A read-write lock. All-zero bytes (NOSV_RWLOCK_INITIALIZER) are an unlocked one. */
typedef union nosv_rwlock_ext {
	uint8_t __pad[SIZEOF_NOSV_RWLOCK];
	uint64_t __align;
} nosv_rwlock_t;

/* Attribute objects: accepted for source compatibility; they carry nothing. */
typedef union nosv_mutexattr_ext {
	uint8_t __pad[SIZEOF_NOSV_MUTEXATTR];
	uint64_t __align;
} nosv_mutexattr_t;

typedef union nosv_barrierattr_ext {
	uint8_t __pad[SIZEOF_NOSV_BARRIERATTR];
	uint64_t __align;
} nosv_barrierattr_t;

typedef union nosv_condattr_ext {
	uint8_t __pad[SIZEOF_NOSV_CONDATTR];
	uint64_t __align;
} nosv_condattr_t;

typedef union nosv_rwlockattr_ext {
	uint8_t __pad[SIZEOF_NOSV_RWLOCKATTR];
	uint64_t __align;
} nosv_rwlockattr_t;

/* Static initialisers, like PTHREAD_MUTEX_INITIALIZER & co. (all zero; the
 * inner braces keep C++ compilers' -Wmissing-braces quiet). */
#define NOSV_MUTEX_INITIALIZER {{0}}
#define NOSV_COND_INITIALIZER {{0}}
#define NOSV_RWLOCK_INITIALIZER {{0}}

/* Flags (none defined yet). */
#define NOSV_MUTEX_NONE __ZEROBITS
#define NOSV_COND_NONE __ZEROBITS

/* ---- Mutexes ----------------------------------------------------------- */

/* Initialises / destroys a mutex attribute object. EINVAL when attr is NULL. */
int nosv_mutexattr_init(nosv_mutexattr_t *attr);
int nosv_mutexattr_destroy(nosv_mutexattr_t *attr);

/* Makes `mutex` an unlocked mutex. `mutexattr` may be NULL (attributes
 * change nothing). EINVAL when mutex is NULL. */
int nosv_mutex_init(nosv_mutex_t *mutex, const nosv_mutexattr_t *mutexattr);

/* Ends a mutex; nosv_mutex_init() may reuse it. EINVAL when mutex is NULL,
 * EBUSY (and nothing changes) while it is locked. */
int nosv_mutex_destroy(nosv_mutex_t *mutex);

/* Locks `mutex`. When it is held, the calling task leaves its CPU (other
 * work runs there) until an unlock hands the mutex to it. Waiters get the
 * mutex in arrival order: unlock passes it straight to the first waiter,
 * which then owns it even before it runs again. Not recursive: a holder
 * that locks again waits forever. EINVAL when mutex is NULL. */
int nosv_mutex_lock(nosv_mutex_t *mutex);

/* Locks `mutex` if it is free, without waiting. EBUSY when it is held
 * (also while it is being handed to a waiter), EINVAL when it is NULL. */
int nosv_mutex_trylock(nosv_mutex_t *mutex);

/* Unlocks `mutex`, handing it to its first waiter if there is one. Any
 * task or thread may unlock (the owner is not recorded). EINVAL when mutex
 * is NULL, EPERM when it is not locked. */
int nosv_mutex_unlock(nosv_mutex_t *mutex);

/* ---- Barriers ---------------------------------------------------------- */

/* Initialises / destroys a barrier attribute object. EINVAL when attr is NULL. */
int nosv_barrierattr_init(nosv_barrierattr_t *attr);
int nosv_barrierattr_destroy(nosv_barrierattr_t *attr);

/* Makes `barrier` a barrier for `count` participants. `attr` may be NULL.
 * EINVAL when barrier is NULL or count is 0. */
int nosv_barrier_init(nosv_barrier_t *barrier, const nosv_barrierattr_t *attr, unsigned count);

/* Ends a barrier; nosv_barrier_init() may reuse it. EINVAL when barrier is
 * NULL or already destroyed, EBUSY while participants wait in it. */
int nosv_barrier_destroy(nosv_barrier_t *barrier);

/* Waits until `count` participants have called it, then lets them all go
 * and starts over for the next round. Waiting tasks leave their CPU; the
 * last one to arrive does not wait. Every participant returns 0: unlike
 * pthread_barrier_wait(), no serial participant is picked. EINVAL when
 * barrier is NULL or destroyed. */
int nosv_barrier_wait(nosv_barrier_t *barrier);

/* ---- Condition variables ---------------------------------------------- */

/* Initialises / destroys a condition attribute object. EINVAL when attr is NULL. */
int nosv_condattr_init(nosv_condattr_t *attr);
int nosv_condattr_destroy(nosv_condattr_t *attr);

/* Makes `cond` a condition variable with no waiters. `condattr` may be NULL.
 * Timed waits measure CLOCK_MONOTONIC, as in nOS-V. EINVAL when cond is
 * NULL. */
int nosv_cond_init(nosv_cond_t *cond, const nosv_condattr_t *condattr);

/* Ends a condition variable. EINVAL when cond is NULL, EBUSY while some
 * task or thread waits on it. */
int nosv_cond_destroy(nosv_cond_t *cond);

/* Wakes the longest waiter, if any (it then relocks its mutex before its
 * wait returns). Callable with or without the mutex held, from tasks and
 * from other threads. EINVAL when cond is NULL. */
int nosv_cond_signal(nosv_cond_t *cond);

/* Wakes every current waiter. EINVAL when cond is NULL. */
int nosv_cond_broadcast(nosv_cond_t *cond);

/* Unlocks `mutex` (which the caller holds) and waits for a signal or
 * broadcast, as one step (a signal after the unlock is never missed); the
 * waiting task leaves its CPU. Locks `mutex` again before returning. A
 * wake-up from another source is possible, as with pthreads: re-check the
 * condition. EINVAL when cond or mutex is NULL, EPERM when mutex is not
 * locked. */
int nosv_cond_wait(nosv_cond_t *cond, nosv_mutex_t *mutex);

/* nosv_cond_wait() with a deadline: `abstime` is an absolute CLOCK_MONOTONIC
 * time, as in nOS-V. The wait ends at the deadline or at a signal before it,
 * whichever comes first, and returns 0 either way (as nOS-V does, with the
 * mutex locked again): re-check the condition, as after any wake-up. A
 * signal that races with the deadline is either consumed by this wait or
 * left for another waiter, never lost. The deadline is tv_sec seconds plus
 * tv_nsec nanoseconds, as nOS-V reads it, even when tv_nsec is outside
 * [0, 1e9). EINVAL also when abstime is NULL. */
int nosv_cond_timedwait(nosv_cond_t *cond, nosv_mutex_t *mutex, const struct timespec *abstime);

/* nosv_cond_wait() with a pthread mutex as the guard. Relocking it after the
 * wake-up is pthread_mutex_lock(), which blocks the thread if contended.
 * Errors as nosv_cond_wait(), plus those of pthread_mutex_unlock() (EPERM
 * for an error-checking mutex the caller does not hold). */
int nosv_cond_wait_pthread(nosv_cond_t *cond, pthread_mutex_t *mutex);

/* nosv_cond_timedwait() with a pthread mutex as the guard. */
int nosv_cond_timedwait_pthread(nosv_cond_t *cond, pthread_mutex_t *mutex,
				const struct timespec *abstime);

/* ---- Read-write locks -------------------------------------------------- */

/* Initialises / destroys a rwlock attribute object. EINVAL when attr is NULL. */
int nosv_rwlockattr_init(nosv_rwlockattr_t *attr);
int nosv_rwlockattr_destroy(nosv_rwlockattr_t *attr);

/* Makes `rwlock` an unlocked read-write lock. `attr` may be NULL. EINVAL
 * when rwlock is NULL. */
int nosv_rwlock_init(nosv_rwlock_t *rwlock, const nosv_rwlockattr_t *attr);

/* Ends a read-write lock. EINVAL when rwlock is NULL, EBUSY while it is
 * held or waited for. */
int nosv_rwlock_destroy(nosv_rwlock_t *rwlock);

/* Takes `rwlock` for writing: waits (the task leaves its CPU) until no
 * reader and no writer holds it. EINVAL when rwlock is NULL. */
int nosv_rwlock_wrlock(nosv_rwlock_t *rwlock);

/* Takes `rwlock` for reading, together with other readers: waits while a
 * writer holds it or waits for it. Writers go first, as in nOS-V, so a
 * reader that locks again while it holds the lock waits forever if a writer
 * started waiting meanwhile. EINVAL when rwlock is NULL, EAGAIN when the count of
 * readers would overflow. */
int nosv_rwlock_rdlock(nosv_rwlock_t *rwlock);

/* Takes `rwlock` for writing if it is free, without waiting. EBUSY when it
 * is held, EINVAL when rwlock is NULL. */
int nosv_rwlock_trywrlock(nosv_rwlock_t *rwlock);

/* Takes `rwlock` for reading if no writer holds it or waits for it,
 * without waiting. EBUSY otherwise, EINVAL when rwlock is NULL. */
int nosv_rwlock_tryrdlock(nosv_rwlock_t *rwlock);

/* Releases one hold of `rwlock` (the write lock, or one read lock). When
 * the last holder leaves, the first waiting writer is let in, or else every
 * waiting reader. EINVAL when rwlock is NULL, EPERM when it is not held. */
int nosv_rwlock_unlock(nosv_rwlock_t *rwlock);

/* ---- Threads ----------------------------------------------------------- */

/* pthread_create(), but the new thread is attached to coexec (as with
 * nosv_attach()) while `start_routine` runs, and detached after it returns
 * or the thread calls pthread_exit(); so it holds a coexec CPU while it
 * runs, and the calls of this header block its task. Join it with
 * pthread_join() as usual. Needs nosv_init(): EINVAL before it, and when
 * thread or start_routine is NULL; EAGAIN when memory runs out; otherwise
 * pthread_create()'s result. If the instance has no free thread slot when
 * the thread starts, it says so on stderr and runs unattached. */
int nosv_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			void *(*start_routine)(void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* NOSV_COMPAT_H */
