// Coexec threads that wait on PoCL's condition variables as paused tasks.
#pragma once

#include <nosv.h>
#include <pthread.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace coexec::pocl {

// A coexec thread that waits on one of PoCL's condition variables does not
// sleep in the kernel's condvar: it registers here and pauses its task
// (nosv_pause), and a signal or broadcast of that condition variable submits
// the task (nosv_submit). So the thread wakes once, on a CPU coexec gave it,
// instead of waking in the condvar first and then waiting for a CPU (two
// wake-ups, with the thread runnable in between on a CPU others hold).
//
// The registry is sound with respect to lost wake-ups for the same reason a
// condvar is: a waiter registers while it still holds the caller's mutex, and
// a signaller changes the predicate under that mutex before it signals, so
// the signaller's look at the registry comes after the registration.
class CondWaiters {
  public:
    // The process's registry.
    static CondWaiters& instance();

    // Waits on `cond` like pthread_cond_wait: the caller holds `mutex`, a
    // coexec CPU and a task (nosv_self()). Returns 0 with `mutex` held. Returns
    // early, like a spurious wake-up, when the task cannot pause (the caller
    // must then wait some other way: see pause_works()).
    int wait(pthread_cond_t* cond, pthread_mutex_t* mutex);

    // Submits the tasks of the threads registered on `cond`: the first one
    // (`all` false) or every one. Returns how many it woke. Cheap when nobody
    // is registered anywhere (one relaxed load).
    int wake(const pthread_cond_t* cond, bool all);

    // False once a pause of the calling thread failed; its later waits must
    // not come here.
    static bool pause_works();

    CondWaiters(const CondWaiters&) = delete;
    CondWaiters& operator=(const CondWaiters&) = delete;

  private:
    // A waiter's node lives in its wait() frame. A waker unlinks it, or the
    // waiter itself when its pause fails (remove_if_waiting()).
    struct Waiter {
        enum State : int { kWaiting, kClaimed, kDone };
        const pthread_cond_t* cond;
        nosv_task_t task;
        Waiter* next = nullptr;
        std::atomic<int> state{kWaiting};
    };
    struct Bucket {
        std::mutex lock;
        Waiter* head = nullptr; // FIFO: signal wakes the longest waiter
        Waiter* tail = nullptr;
        // Under `lock`: takes `n`, which follows `prev` (nullptr: the head),
        // out of the list.
        void unlink(Waiter* prev, Waiter* n);
    };

    CondWaiters() = default;
    // In a forked child (pthread_atfork): no waiter exists there.
    void forget_all_in_child();
    Bucket& bucket_of(const pthread_cond_t* cond);
    void add(Waiter& w);
    bool remove_if_waiting(Waiter& w);

    static constexpr int kBucketBits = 6;
    static constexpr std::size_t kBuckets = std::size_t{1} << kBucketBits;
    std::array<Bucket, kBuckets> buckets_;
    // How many waiters are registered, for the wakers' fast path. Changed
    // under a bucket lock; see wake() for why a relaxed load is enough.
    std::atomic<int> registered_{0};
};

} // namespace coexec::pocl
