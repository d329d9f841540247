// nosv/compat.h: mutexes, condition variables, barriers and read-write
// locks that block the calling task (nosv_pause / nosv_waitfor) rather than
// its thread, and nosv_pthread_create.
//
// Every object is a small guard lock (SpinLock) over its state and a FIFO
// queue of waiters. A waiter is a record on the waiting caller's stack. The
// one who lets a waiter through (unlock, signal, the barrier's last
// arrival) takes it off the queue, updates the object's state on its behalf
// (hand-off: the waiter owns what it waited for before it runs again), sets
// its `granted` word and resumes it, all while holding the guard:
//   - a task waiter is resumed with nosv_submit (NOSV_SUBMIT_DEADLINE_WAKE
//     for a timed one, which sleeps in nosv_waitfor). Submits are banked, so
//     one that arrives before the waiter paused makes the pause return at
//     once: no lost wake-up;
//   - a thread outside any task waits on `granted` with a futex.
// A waiter trusts `granted` only when read under the guard: then the whole
// grant, wake-up included, is over, so it consumes exactly the wake meant
// for it and may drop its record (the granter never touches the record
// after releasing the guard).
#include <nosv/compat.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"
#include "core/runtime/spin_lock.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/tasks/task.hpp"
#include "shm/futex.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <new>
#include <type_traits>

namespace coexec::core {
namespace {

constexpr auto relaxed = std::memory_order_relaxed;
constexpr auto acquire = std::memory_order_acquire;
constexpr auto release = std::memory_order_release;

// The task that a wait would block, or null when the caller must block its
// thread: no runtime, a thread coexec does not know, no task bound, or a
// task whose thread is outside coexec (it holds no CPU to give away).
nosv_task* blockable_task() {
    if (!Runtime::get()) return nullptr;
    ThreadContext* self = this_thread_context();
    if (!self || !self->work.current || self->held.cpu == shm::kNone) return nullptr;
    return self->work.current;
}

// nOS-V's contract for the calls that lock, unlock or wait: only from a
// task context (a running task, or an attached thread), else ESRCH; and a
// call that may block returns EINVAL from a task that cannot be blocked
// (one execution of a parallel task). Signalling and init/destroy work
// from anywhere.
int task_context_error(bool may_block) {
    if (!Runtime::get()) return ESRCH;
    const ThreadContext* self = this_thread_context();
    if (!self || !self->work.current) return ESRCH;
    if (may_block && in_parallel_execution(self)) return EINVAL;
    return 0;
}

// One waiting task or thread, on its own stack while it waits.
struct Waiter {
    explicit Waiter(nosv_task* t, bool timed_wait = false, bool reader = false)
        : task(t), timed(timed_wait), reads(reader) {}
    nosv_task* const task; // null: a thread, which waits on `granted`
    const bool timed;      // the task sleeps in nosv_waitfor, not nosv_pause
    const bool reads;      // a rwlock reader (else a writer)
    // Set by the granter under the guard; also the thread waiter's futex.
    std::atomic<uint32_t> granted{0};
    Waiter* next = nullptr;
};

// FIFO of waiters; only touched under the owning object's guard.
struct WaitQueue {
    Waiter* head;
    Waiter* tail;

    bool empty() const { return !head; }
    void push(Waiter* w) {
        w->next = nullptr;
        if (tail)
            tail->next = w;
        else
            head = w;
        tail = w;
    }
    Waiter* pop() {
        Waiter* w = head;
        if (w) {
            head = w->next;
            if (!head) tail = nullptr;
        }
        return w;
    }
    // Unlinks `w`; false if it is not queued (a granter took it already).
    bool remove(Waiter* w) {
        Waiter* prev = nullptr;
        for (Waiter* p = head; p; prev = p, p = p->next) {
            if (p != w) continue;
            (prev ? prev->next : head) = p->next;
            if (tail == p) tail = prev;
            return true;
        }
        return false;
    }
};

// Lets `w` (already off its queue) through. Under the object's guard: the
// waiter checks `granted` under the same guard, so it cannot return, and
// drop the record, before the wake-up below is delivered.
void grant(Waiter* w) {
    nosv_task* t = w->task;
    // Release: the object's state set for the waiter (the mutex it now
    // owns) is visible to it; a thread waiter reads `granted` outside the
    // guard first.
    w->granted.store(1, release);
    if (!t)
        shm::futex_wake(w->granted);
    else if (w->timed)
        // Ends its nosv_waitfor early; one that arrives after the sleep is
        // kept by the task and cleared by the waiter (see wait_until).
        nosv_submit(t, NOSV_SUBMIT_DEADLINE_WAKE);
    else
        // Resumes its nosv_pause, or is banked if it has not paused yet.
        nosv_submit(t, NOSV_SUBMIT_NONE);
}

// Blocks until `w` is granted. Called without the guard, after `w` was
// queued under it.
void wait(SpinLock& guard, Waiter& w) {
    if (!w.task) {
        // A thread: the futex returns only once `granted` moved (or
        // spuriously, then we look again).
        while (!w.granted.load(acquire))
            shm::futex_wait(w.granted, 0);
        // The granter may still be about to wake the futex: let it finish
        // with the record before it goes out of scope.
        std::lock_guard sync(guard);
        return;
    }
    for (;;) {
        nosv_pause(NOSV_PAUSE_NONE);
        // A pause may also end because of a submit banked earlier by
        // someone else: only `granted`, read under the guard, says ours came.
        std::lock_guard check(guard);
        if (w.granted.load(relaxed)) return;
    }
}

// Nanoseconds from now until `abstime` on CLOCK_MONOTONIC; <= 0 when past.
// As nOS-V does, the deadline is tv_sec seconds plus tv_nsec nanoseconds,
// whatever tv_nsec holds (its tests add to tv_nsec without carrying);
// 128-bit sums keep a far deadline (tv_sec near its maximum) from
// overflowing.
int64_t ns_until(const timespec& abstime) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const __int128 left = (__int128(abstime.tv_sec) - now.tv_sec) * 1'000'000'000 +
                          (__int128(abstime.tv_nsec) - now.tv_nsec);
    return int64_t(std::clamp<__int128>(left, INT64_MIN, INT64_MAX));
}

// Blocks until `w` is granted or `abstime` passes (then `w` is off
// `queue`). The race between the deadline and a grant is decided under the
// guard: a waiter still queued at its deadline removes itself and times
// out; one already taken off the queue was granted, and its wait counts as
// woken, whatever the clock says.
void wait_until(SpinLock& guard, WaitQueue& queue, Waiter& w, const timespec& abstime) {
    for (;;) {
        const int64_t left = ns_until(abstime);
        if (left > 0) {
            if (w.task)
                nosv_waitfor(uint64_t(left), nullptr);
            else if (!w.granted.load(acquire))
                shm::futex_wait(w.granted, 0, uint64_t(left));
        }
        std::lock_guard check(guard);
        if (w.granted.load(relaxed)) {
            // The grant's DEADLINE_WAKE either ended the sleep (consumed),
            // or came when the task was not asleep: then it is still kept
            // and would cut the task's next nosv_waitfor short. Drop it.
            // No one else wakes this task (see the header), so the word
            // holds no other wake.
            if (w.task) w.task->deadline.clear();
            return;
        }
        if (left <= 0) {
            queue.remove(&w);
            return;
        }
    }
}

// ---- Mutex --------------------------------------------------------------
//
// Fairness: unlock hands the mutex straight to the longest waiter (it stays
// held meanwhile), so waiters get it in arrival order, and a newcomer never
// overtakes them (it finds the mutex held). Each contended lock costs one
// pause and one submit; with barging instead, a woken task could find the
// mutex retaken and pause again, a CPU switch for nothing, and could starve.
// The price is a convoy: the mutex stays with the woken task until it gets
// a CPU back, even if the unlocker would re-lock at once.

// The lock word: free, held, or held with waiters queued. Under the guard,
// kQueued holds exactly when the queue is not empty. The fast paths are
// single CAS operations on the word outside the guard; each one races only
// with the others and with the CASes done under the guard, and whichever
// CAS wins decides, so a fast unlock (kHeld -> kFree) and a waiter
// announcing itself (kHeld -> kQueued) never both succeed.
enum : uint32_t { kFree = 0, kHeld = 1, kQueued = 2 };

struct Mutex {
    std::atomic<uint32_t> word;
    SpinLock guard;
    WaitQueue queue;
};

// Free -> held with one CAS; acquire pairs with the release of the unlock
// (or the grant) that freed it, so the previous holder's writes are seen.
bool try_take(Mutex& m) {
    uint32_t expected = kFree;
    return m.word.compare_exchange_strong(expected, kHeld, acquire, relaxed);
}

// The caller holds the mutex afterwards.
void lock(Mutex& m) {
    if (try_take(m)) return;
    Waiter w(blockable_task());
    {
        std::lock_guard g(m.guard);
        uint32_t s = m.word.load(relaxed);
        for (;;) {
            if (s == kFree) {
                // Freed meanwhile; the queue is empty (kQueued would show).
                if (m.word.compare_exchange_weak(s, kHeld, acquire, relaxed)) return;
            } else if (m.word.compare_exchange_weak(s, kQueued, acquire, relaxed)) {
                // Held and now marked: the holder's unlock must come here.
                break;
            }
        }
        m.queue.push(&w);
    }
    wait(m.guard, w); // the unlock hands us the mutex
}

int unlock(Mutex& m) {
    uint32_t s = m.word.load(relaxed);
    // Release: our critical section happens before the next holder's.
    if (s == kHeld && m.word.compare_exchange_strong(s, kFree, release, relaxed)) return 0;
    if (s == kFree) return EPERM;
    std::lock_guard g(m.guard);
    // kQueued (it cannot drop back to kHeld or kFree without us): a waiter
    // is queued, and it takes the mutex over, still held.
    Waiter* w = m.queue.pop();
    if (!w) return EPERM; // only if the caller broke the mutex (a double unlock)
    if (m.queue.empty()) m.word.store(kHeld, release);
    grant(w);
    return 0;
}

// ---- Condition variable --------------------------------------------------

struct Cond {
    SpinLock guard;
    WaitQueue queue;
};

// How a condition wait releases and retakes its mutex.
struct NosvGuard {
    Mutex& m;
    int release() { return unlock(m); }
    void retake() { lock(m); }
};
struct PthreadGuard {
    pthread_mutex_t* m;
    int release() { return pthread_mutex_unlock(m); }
    void retake() { pthread_mutex_lock(m); }
};

// Queues the caller before releasing the mutex, so a signal sent by whoever
// takes the mutex next finds it: the release and the wait are one step.
template <class Guard>
int cond_wait(Cond& c, Guard mutex, const timespec* abstime) {
    Waiter w(blockable_task(), abstime != nullptr);
    {
        std::lock_guard g(c.guard);
        c.queue.push(&w);
    }
    if (int rc = mutex.release()) {
        // We may not wait: withdraw. A signal that picked us meanwhile
        // passes on to the next waiter, so it is not lost.
        bool banked = false;
        {
            std::lock_guard g(c.guard);
            if (!c.queue.remove(&w)) {
                if (w.task && w.timed) w.task->deadline.clear();
                banked = w.task && !w.timed;
                if (Waiter* next = c.queue.pop()) grant(next);
            }
        }
        // The submit banked for us would cut a later pause short: use it
        // up now (the task runs, so it was banked and this returns at once).
        if (banked) nosv_pause(NOSV_PAUSE_NONE);
        return rc;
    }
    if (!abstime)
        wait(c.guard, w);
    else
        // As in nOS-V, a wait that its deadline ended returns 0 too: the
        // caller re-checks its condition, as after any wake-up.
        wait_until(c.guard, c.queue, w, *abstime);
    mutex.retake();
    return 0;
}

void cond_wake(Cond& c, bool all) {
    std::lock_guard g(c.guard);
    while (Waiter* w = c.queue.pop()) {
        grant(w);
        if (!all) break;
    }
}

// ---- Barrier -------------------------------------------------------------

struct Barrier {
    SpinLock guard;
    uint32_t count; // participants per round; 0: not initialised
    uint32_t arrived;
    WaitQueue queue;
};

// ---- Read-write lock -----------------------------------------------------

// Writers first, as in nOS-V: a reader also waits while a writer waits, so
// a stream of readers cannot keep writers out. When the lock frees, the
// waiting writers go in one by one, and the queued readers together once
// no writer waits. The lock is free only while nobody is queued: whoever
// frees it hands it over at once, under the guard.
struct Rwlock {
    SpinLock guard;
    bool writer;              // a writer holds it
    uint32_t readers;         // readers holding it
    uint32_t writers_waiting; // writers in `queue`
    WaitQueue queue;
};

// Hands the free lock to its waiters: the first writer, or else every
// queued reader. Under the guard.
void rw_hand_over(Rwlock& l) {
    if (l.writers_waiting > 0) {
        Waiter* w = l.queue.head;
        while (w->reads)
            w = w->next;
        l.queue.remove(w);
        --l.writers_waiting;
        l.writer = true;
        grant(w);
        return;
    }
    while (Waiter* w = l.queue.pop()) {
        ++l.readers;
        grant(w);
    }
}

int rw_lock(Rwlock& l, bool reads, bool try_only) {
    Waiter w(try_only ? nullptr : blockable_task(), false, reads);
    {
        std::lock_guard g(l.guard);
        if (reads && !l.writer && l.writers_waiting == 0) {
            if (l.readers == UINT32_MAX) return EAGAIN;
            ++l.readers;
            return 0;
        }
        if (!reads && !l.writer && l.readers == 0) {
            l.writer = true;
            return 0;
        }
        if (try_only) return EBUSY;
        if (!reads) ++l.writers_waiting;
        l.queue.push(&w);
    }
    wait(l.guard, w); // the hand-over counted us in
    return 0;
}

// The objects live inside the caller's opaque unions, and all-zero bytes
// must be valid initial states (the static initialisers).
template <class Impl, class Ext>
Impl* impl(Ext* ext) {
    static_assert(sizeof(Impl) <= sizeof(Ext) && alignof(Impl) <= alignof(Ext));
    static_assert(std::is_standard_layout_v<Impl>);
    return ext ? std::launder(reinterpret_cast<Impl*>(ext)) : nullptr;
}

template <class Ext>
int zero(Ext* ext) {
    if (!ext) return EINVAL;
    // Placement-new of the bytes: all zero is each object's initial state.
    new (ext) Ext{};
    return 0;
}

// ---- nosv_pthread_create -------------------------------------------------

struct ThreadStart {
    void* (*routine)(void*);
    void* arg;
};

// Detaches the thread when its routine ends, by return or by pthread_exit
// (which unwinds the stack and so runs this destructor).
class AttachScope {
  public:
    AttachScope() {
        nosv_task_t task;
        const int rc = nosv_attach(&task, nullptr, "pthread", NOSV_ATTACH_NONE);
        attached_ = rc == NOSV_SUCCESS;
        if (!attached_)
            std::fprintf(stderr,
                         "coexec: nosv_pthread_create: the new thread could not attach (%s); it "
                         "runs outside coexec\n",
                         nosv_get_error_string(rc));
    }
    ~AttachScope() {
        if (attached_) nosv_detach(NOSV_DETACH_NONE);
    }
    AttachScope(const AttachScope&) = delete;
    AttachScope& operator=(const AttachScope&) = delete;

  private:
    bool attached_ = false;
};

void* thread_start(void* p) {
    const ThreadStart start = *static_cast<ThreadStart*>(p);
    delete static_cast<ThreadStart*>(p);
    AttachScope scope;
    return start.routine(start.arg);
}

} // namespace
} // namespace coexec::core

using namespace coexec::core;

// Every entry is a RuntimeSection: a preemption signal must not take the CPU
// from a task while it holds a guard, or tasks spinning on that guard on the
// same CPU would wait for a holder that cannot run.

// ---- attributes (they carry nothing) ---------------------------------------

COEXEC_API int nosv_mutexattr_init(nosv_mutexattr_t* attr) {
    return zero(attr);
}
COEXEC_API int nosv_mutexattr_destroy(nosv_mutexattr_t* attr) {
    return attr ? 0 : EINVAL;
}
COEXEC_API int nosv_barrierattr_init(nosv_barrierattr_t* attr) {
    return zero(attr);
}
COEXEC_API int nosv_barrierattr_destroy(nosv_barrierattr_t* attr) {
    return attr ? 0 : EINVAL;
}
COEXEC_API int nosv_condattr_init(nosv_condattr_t* attr) {
    return zero(attr);
}
COEXEC_API int nosv_condattr_destroy(nosv_condattr_t* attr) {
    return attr ? 0 : EINVAL;
}
COEXEC_API int nosv_rwlockattr_init(nosv_rwlockattr_t* attr) {
    return zero(attr);
}
COEXEC_API int nosv_rwlockattr_destroy(nosv_rwlockattr_t* attr) {
    return attr ? 0 : EINVAL;
}

// ---- mutex ---------------------------------------------------------------

COEXEC_API int nosv_mutex_init(nosv_mutex_t* mutex, const nosv_mutexattr_t*) {
    return zero(mutex);
}

COEXEC_API int nosv_mutex_destroy(nosv_mutex_t* mutex) {
    Mutex* m = impl<Mutex>(mutex);
    if (!m) return EINVAL;
    // A relaxed look suffices: destroying a mutex others still use is the
    // caller's error; this only catches one left locked.
    return m->word.load(relaxed) == kFree ? 0 : EBUSY;
}

COEXEC_API int nosv_mutex_lock(nosv_mutex_t* mutex) {
    Mutex* m = impl<Mutex>(mutex);
    if (!m) return EINVAL;
    if (int e = task_context_error(true)) return e;
    RuntimeSection section;
    lock(*m);
    return 0;
}

COEXEC_API int nosv_mutex_trylock(nosv_mutex_t* mutex) {
    Mutex* m = impl<Mutex>(mutex);
    if (!m) return EINVAL;
    if (int e = task_context_error(false)) return e;
    return try_take(*m) ? 0 : EBUSY;
}

COEXEC_API int nosv_mutex_unlock(nosv_mutex_t* mutex) {
    Mutex* m = impl<Mutex>(mutex);
    if (!m) return EINVAL;
    if (int e = task_context_error(false)) return e;
    RuntimeSection section;
    return unlock(*m);
}

// ---- condition variable -----------------------------------------------------

COEXEC_API int nosv_cond_init(nosv_cond_t* cond, const nosv_condattr_t*) {
    return zero(cond);
}

COEXEC_API int nosv_cond_destroy(nosv_cond_t* cond) {
    Cond* c = impl<Cond>(cond);
    if (!c) return EINVAL;
    RuntimeSection section;
    std::lock_guard g(c->guard);
    return c->queue.empty() ? 0 : EBUSY;
}

COEXEC_API int nosv_cond_signal(nosv_cond_t* cond) {
    Cond* c = impl<Cond>(cond);
    if (!c) return EINVAL;
    RuntimeSection section;
    cond_wake(*c, false);
    return 0;
}

COEXEC_API int nosv_cond_broadcast(nosv_cond_t* cond) {
    Cond* c = impl<Cond>(cond);
    if (!c) return EINVAL;
    RuntimeSection section;
    cond_wake(*c, true);
    return 0;
}

COEXEC_API int nosv_cond_wait(nosv_cond_t* cond, nosv_mutex_t* mutex) {
    Cond* c = impl<Cond>(cond);
    Mutex* m = impl<Mutex>(mutex);
    if (!c || !m) return EINVAL;
    if (int e = task_context_error(true)) return e;
    if (m->word.load(relaxed) == kFree) return EPERM; // the caller must hold it
    RuntimeSection section;
    return cond_wait(*c, NosvGuard{*m}, nullptr);
}

COEXEC_API int nosv_cond_timedwait(nosv_cond_t* cond, nosv_mutex_t* mutex,
                                   const struct timespec* abstime) {
    Cond* c = impl<Cond>(cond);
    Mutex* m = impl<Mutex>(mutex);
    if (!c || !m || !abstime) return EINVAL;
    if (int e = task_context_error(true)) return e;
    if (m->word.load(relaxed) == kFree) return EPERM;
    RuntimeSection section;
    return cond_wait(*c, NosvGuard{*m}, abstime);
}

COEXEC_API int nosv_cond_wait_pthread(nosv_cond_t* cond, pthread_mutex_t* mutex) {
    Cond* c = impl<Cond>(cond);
    if (!c || !mutex) return EINVAL;
    if (int e = task_context_error(true)) return e;
    RuntimeSection section;
    return cond_wait(*c, PthreadGuard{mutex}, nullptr);
}

COEXEC_API int nosv_cond_timedwait_pthread(nosv_cond_t* cond, pthread_mutex_t* mutex,
                                           const struct timespec* abstime) {
    Cond* c = impl<Cond>(cond);
    if (!c || !mutex || !abstime) return EINVAL;
    if (int e = task_context_error(true)) return e;
    RuntimeSection section;
    return cond_wait(*c, PthreadGuard{mutex}, abstime);
}

// ---- barrier -------------------------------------------------------------

COEXEC_API int nosv_barrier_init(nosv_barrier_t* barrier, const nosv_barrierattr_t*,
                                 unsigned count) {
    if (!barrier || count == 0) return EINVAL;
    zero(barrier);
    impl<Barrier>(barrier)->count = count;
    return 0;
}

COEXEC_API int nosv_barrier_destroy(nosv_barrier_t* barrier) {
    Barrier* b = impl<Barrier>(barrier);
    if (!b) return EINVAL;
    RuntimeSection section;
    std::lock_guard g(b->guard);
    if (b->count == 0) return EINVAL;
    if (b->arrived != 0) return EBUSY;
    b->count = 0;
    return 0;
}

COEXEC_API int nosv_barrier_wait(nosv_barrier_t* barrier) {
    Barrier* b = impl<Barrier>(barrier);
    if (!b) return EINVAL;
    if (int e = task_context_error(true)) return e;
    RuntimeSection section;
    Waiter w(blockable_task());
    {
        std::lock_guard g(b->guard);
        if (b->count == 0) return EINVAL;
        if (++b->arrived == b->count) {
            // The last arrival ends the round: everyone queued goes. It
            // returns 0 like the others: nOS-V's barrier picks no serial
            // participant (its compat.h lists only 0, EINVAL and ESRCH), and
            // a program written for it may treat any other answer as an
            // error.
            b->arrived = 0;
            while (Waiter* q = b->queue.pop())
                grant(q);
            return 0;
        }
        b->queue.push(&w);
    }
    wait(b->guard, w);
    return 0;
}

// ---- read-write lock --------------------------------------------------------

COEXEC_API int nosv_rwlock_init(nosv_rwlock_t* rwlock, const nosv_rwlockattr_t*) {
    return zero(rwlock);
}

COEXEC_API int nosv_rwlock_destroy(nosv_rwlock_t* rwlock) {
    Rwlock* l = impl<Rwlock>(rwlock);
    if (!l) return EINVAL;
    RuntimeSection section;
    std::lock_guard g(l->guard);
    return l->writer || l->readers || !l->queue.empty() ? EBUSY : 0;
}

COEXEC_API int nosv_rwlock_wrlock(nosv_rwlock_t* rwlock) {
    Rwlock* l = impl<Rwlock>(rwlock);
    if (!l) return EINVAL;
    if (int e = task_context_error(true)) return e;
    RuntimeSection section;
    return rw_lock(*l, false, false);
}

COEXEC_API int nosv_rwlock_rdlock(nosv_rwlock_t* rwlock) {
    Rwlock* l = impl<Rwlock>(rwlock);
    if (!l) return EINVAL;
    if (int e = task_context_error(true)) return e;
    RuntimeSection section;
    return rw_lock(*l, true, false);
}

COEXEC_API int nosv_rwlock_trywrlock(nosv_rwlock_t* rwlock) {
    Rwlock* l = impl<Rwlock>(rwlock);
    if (!l) return EINVAL;
    if (int e = task_context_error(false)) return e;
    RuntimeSection section;
    return rw_lock(*l, false, true);
}

COEXEC_API int nosv_rwlock_tryrdlock(nosv_rwlock_t* rwlock) {
    Rwlock* l = impl<Rwlock>(rwlock);
    if (!l) return EINVAL;
    if (int e = task_context_error(false)) return e;
    RuntimeSection section;
    return rw_lock(*l, true, true);
}

COEXEC_API int nosv_rwlock_unlock(nosv_rwlock_t* rwlock) {
    Rwlock* l = impl<Rwlock>(rwlock);
    if (!l) return EINVAL;
    if (int e = task_context_error(false)) return e;
    RuntimeSection section;
    std::lock_guard g(l->guard);
    if (l->writer) {
        l->writer = false;
    } else if (l->readers > 0) {
        if (--l->readers > 0) return 0;
    } else {
        return EPERM;
    }
    rw_hand_over(*l);
    return 0;
}

// ---- threads -------------------------------------------------------------

COEXEC_API int nosv_pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                   void* (*start_routine)(void*), void* arg) {
    if (!thread || !start_routine || !Runtime::get()) return EINVAL;
    auto* start = new (std::nothrow) ThreadStart{start_routine, arg};
    if (!start) return EAGAIN;
    const int rc = pthread_create(thread, attr, thread_start, start);
    if (rc != 0) delete start;
    return rc;
}
