// nosv_suspend: a task whose body returns after nosv_suspend() is not
// complete; its body runs again later, from the start, when the suspend
// mode says (see nosv.h). SuspendState is the per-task part, SuspendTimers
// resumes the tasks suspended with NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT.
#pragma once

#include "core/runtime/thread_starts.hpp"

#include <nosv.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace coexec::core {

// Only the task's own body (one thread at a time) writes mode, args and
// requested; `resuming` and `event_wait` are handed from the thread that
// suspends the task to the one that resumes it through the task's status
// word or its event counter (both acq_rel), so plain fields suffice.
struct SuspendState {
    uint64_t args = 0;
    // A nosv_suspend_mode_t, kept in a byte so that a task stays two cache
    // lines (core/tasks/task.hpp).
    uint8_t mode = NOSV_SUSPEND_MODE_NONE;
    bool requested = false;  // nosv_suspend() was called in this run of the body
    bool resuming = false;   // the next run continues a suspended task (events kept)
    bool event_wait = false; // EVENT_SUBMIT: the last event resumes, not completes
    bool timer = false;      // a TIMEOUT_SUBMIT timer may still hold the task
};

// One thread per process, started on first use, that resumes tasks when
// their timeout passes. The callback runs on that thread with the timers'
// lock held, so cancel() returning means no callback for that task is
// running or will run: the task may then be freed.
class SuspendTimers {
  public:
    using Fire = std::function<void(nosv_task*)>;

    explicit SuspendTimers(ThreadStarts& starts) : starts_(starts) {}
    ~SuspendTimers() { stop(); }
    SuspendTimers(const SuspendTimers&) = delete;
    SuspendTimers& operator=(const SuspendTimers&) = delete;

    enum class Armed {
        Armed,        // suspended, and the timer will fire
        NotSuspended, // `suspend` returned false: no timer
        Failed,       // no timer thread (or stopped): `suspend` was not called
    };
    // Calls `suspend()` and, if it returns true, arranges `fire(task)` once
    // `deadline_ns` (shm::now_ns clock) has passed, unless cancel(task)
    // comes first. `suspend` runs under the timers' lock, so a task resumed
    // by someone else right after it cannot cancel before the timer exists.
    // The first call's `fire` serves every later one.
    Armed arm(nosv_task* task, uint64_t deadline_ns, Fire fire,
              const std::function<bool()>& suspend);
    // Drops every timer of `task`; waits for a running callback of it.
    void cancel(nosv_task* task);
    // Joins the thread; timers still armed are dropped (the runtime stops).
    void stop();

  private:
    void main();

    ThreadStarts& starts_; // the runtime's: launches the timer thread
    std::mutex mutex_;
    std::condition_variable changed_;
    std::multimap<uint64_t, nosv_task*> due_; // deadline -> task
    Fire fire_;
    bool stopping_ = false;
    std::thread thread_;
};

} // namespace coexec::core
