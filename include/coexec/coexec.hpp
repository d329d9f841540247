// coexec: the C++ API, a thin layer over the nOS-V-compatible C API.
//
// Errors are reported one way: every failing call throws coexec::error (a
// std::system_error whose code() is in coexec::nosv_category() and holds
// the negative nosv code). Destructors never throw (one that cannot do its
// job ends the process with a message: countdown::wait_in_destructor).
#pragma once

#include <nosv.h>
#include <nosv/affinity.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace coexec {

// The category of nosv error codes; message() is nosv_get_error_string().
inline const std::error_category& nosv_category() noexcept {
    struct category final : std::error_category {
        const char* name() const noexcept override { return "nosv"; }
        std::string message(int code) const override { return nosv_get_error_string(code); }
    };
    static const category instance;
    return instance;
}

// Thrown by every call of this API that fails.
class error : public std::system_error {
  public:
    error(int code, const char* what) : std::system_error(code, nosv_category(), what) {}
};

// Throws coexec::error when `rc` is a nosv error code; returns `rc` otherwise.
inline int check(int rc, const char* what) {
    if (rc < 0) throw error(rc, what);
    return rc;
}

// Joins the shared instance for its lifetime (nosv_init / nosv_shutdown).
// Guards nest like the calls they wrap.
class runtime {
  public:
    runtime() { check(nosv_init(), "nosv_init"); }
    ~runtime() { nosv_shutdown(); }
    runtime(const runtime&) = delete;
    runtime& operator=(const runtime&) = delete;
};

// Where a task may run: a system CPU id or NUMA node, strict or preferred.
class affinity {
  public:
    // No affinity: any CPU.
    affinity()
        : raw_(nosv_affinity_get(0, NOSV_AFFINITY_LEVEL_NONE, NOSV_AFFINITY_TYPE_PREFERRED)) {}
    static affinity cpu(uint32_t system_cpu, bool strict = true) {
        return affinity(nosv_affinity_get(system_cpu, NOSV_AFFINITY_LEVEL_CPU, type(strict)));
    }
    static affinity numa(uint32_t system_node, bool strict = true) {
        return affinity(nosv_affinity_get(system_node, NOSV_AFFINITY_LEVEL_NUMA, type(strict)));
    }
    nosv_affinity_t raw() const { return raw_; }

  private:
    explicit affinity(nosv_affinity_t a) : raw_(a) {}
    static nosv_affinity_type_t type(bool strict) {
        return strict ? NOSV_AFFINITY_TYPE_STRICT : NOSV_AFFINITY_TYPE_PREFERRED;
    }
    nosv_affinity_t raw_;
};

// Makes the calling thread a coexec thread for the guard's lifetime: the
// constructor blocks until a CPU is granted; the destructor gives it back and
// restores the thread's affinity.
class attach_guard {
  public:
    explicit attach_guard(const char* label = "attached", const affinity* where = nullptr) {
        nosv_affinity_t a = where ? where->raw() : affinity().raw();
        check(nosv_attach(&task_, where ? &a : nullptr, label, NOSV_ATTACH_NONE), "nosv_attach");
    }
    ~attach_guard() { nosv_detach(NOSV_DETACH_NONE); }
    attach_guard(const attach_guard&) = delete;
    attach_guard& operator=(const attach_guard&) = delete;
    nosv_task_t task() const { return task_; }

  private:
    nosv_task_t task_ = nullptr;
};

// Scheduling points for the calling task; each throws outside a task.
namespace this_task {
// The calling task, or nullptr outside one.
inline nosv_task_t get() noexcept {
    return nosv_self();
}
// Waits for a submit of the calling task; its CPU goes elsewhere meanwhile.
inline void pause() {
    check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
}
// Lets other tasks ready for this CPU run first.
inline void yield() {
    check(nosv_yield(NOSV_YIELD_NONE), "nosv_yield");
}
// Gives way only if this process's quantum is spent and others wait.
inline void schedpoint() {
    check(nosv_schedpoint(NOSV_SCHEDPOINT_NONE), "nosv_schedpoint");
}
// Sleeps without holding a CPU; returns how long the task was away.
inline std::chrono::nanoseconds waitfor(std::chrono::nanoseconds d) {
    uint64_t actual = 0;
    check(nosv_waitfor(uint64_t(d.count() < 0 ? 0 : d.count()), &actual), "nosv_waitfor");
    return std::chrono::nanoseconds(actual);
}
} // namespace this_task

// Resumes a paused task (or makes a created one ready); a task that is not
// paused keeps the submit for its next pause (see nosv_submit).
inline void submit(nosv_task_t task, nosv_flags_t flags = NOSV_SUBMIT_NONE) {
    check(nosv_submit(task, flags), "nosv_submit");
}

namespace detail {
// Work outstanding, and whoever waits for it to reach zero. A waiter inside a
// task pauses (freeing its CPU); any other thread blocks on a condition
// variable, which is fine because it holds no coexec CPU. Any number of
// either may wait at once.
//
// A waiter may destroy the countdown as soon as wait() returns, so the last
// arrive() touches it only under its mutex: a waiter sees zero only once it
// holds the mutex after that. What arrive() does after it unlocks (resuming
// paused waiters) uses copies.
class countdown {
  public:
    // Adds `n` to what is outstanding.
    void add(long n = 1) {
        std::lock_guard lock(m_);
        pending_ += n;
    }
    // Returns once nothing is outstanding. Throws coexec::error when it
    // would have to wait where a task may not pause (an execution of a
    // parallel task) or the pause fails.
    void wait() { wait_for_zero(false); }
    // The same for destructors, which may not throw. An execution of a
    // parallel task can neither pause nor give its CPU away, so blocking
    // there could leave every CPU to waiters; with work outstanding it ends
    // the process with a message instead (as returning would leave the work
    // with a dangling countdown).
    void wait_in_destructor() noexcept { wait_for_zero(true); }
    // One piece of work is done; the last one releases the waiters.
    void arrive() {
        std::vector<nosv_task_t> paused;
        {
            std::lock_guard lock(m_);
            if (--pending_ != 0) return;
            paused.swap(paused_);
            cv_.notify_all(); // under the lock: see the class comment
        }
        for (nosv_task_t t : paused)
            nosv_submit(t, NOSV_SUBMIT_UNLOCKED);
    }

  private:
    // Whether `self` runs in an execution of a parallel task (degree above
    // 1, negated once cancelled), where nosv_pause is refused. Asked before
    // the task is listed: a listed task gets a submit from arrive().
    static bool in_parallel_execution(nosv_task_t self) {
        const int32_t degree = nosv_get_task_degree(self);
        return degree > 1 || degree < -1;
    }
    void wait_for_zero(bool in_destructor) {
        std::unique_lock lock(m_);
        nosv_task_t self = nosv_self();
        if (!self) {
            cv_.wait(lock, [&] { return pending_ == 0; });
            return;
        }
        if (pending_ != 0 && in_parallel_execution(self))
            refuse(NOSV_ERR_INVALID_OPERATION,
                   "wait in an execution of a parallel task, which may not pause", in_destructor);
        while (pending_ != 0) {
            paused_.push_back(self);
            lock.unlock();
            const int rc = nosv_pause(NOSV_PAUSE_NONE); // a submit racing ahead is kept
            lock.lock();
            // Still listed if another submit resumed us, or the pause failed.
            paused_.erase(std::remove(paused_.begin(), paused_.end(), self), paused_.end());
            if (rc < 0) refuse(rc, "nosv_pause", in_destructor);
        }
    }
    // A wait that cannot be done: an error for wait(), the end of the
    // process for a destructor (see wait_in_destructor).
    [[noreturn]] static void refuse(int rc, const char* why, bool in_destructor) {
        if (!in_destructor) throw error(rc, why);
        std::fprintf(stderr,
                     "coexec: a task or task_group was destroyed with tasks outstanding where it "
                     "cannot wait for them (%s: %s); wait for them before, from an ordinary "
                     "task or thread\n",
                     why, nosv_get_error_string(rc));
        std::abort();
    }

    std::mutex m_;
    std::condition_variable cv_;
    long pending_ = 0;
    std::vector<nosv_task_t> paused_;
};
} // namespace detail

// A task type whose tasks run C++ callables. Label shows in `coexec top`.
class task_type {
  public:
    explicit task_type(const std::string& label = "task") {
        check(nosv_type_init(&type_, &run, nullptr, &completed, label.c_str(), nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              "nosv_type_init");
    }
    ~task_type() { nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE); }
    task_type(const task_type&) = delete;
    task_type& operator=(const task_type&) = delete;
    nosv_task_type_t get() const { return type_; }

    // What the metadata of each task of this type points to.
    struct body {
        std::function<void()> fn;
        detail::countdown* done; // arrived at once the task completed
        bool one_shot;           // the body and its task are freed then
    };

  private:
    static body& of(nosv_task_t t) { return **static_cast<body**>(nosv_get_task_metadata(t)); }
    static void run(nosv_task_t t) { of(t).fn(); }
    static void completed(nosv_task_t t) {
        body* b = &of(t);
        detail::countdown* done = b->done;
        if (b->one_shot) {
            nosv_destroy(t, NOSV_DESTROY_NONE);
            delete b;
        }
        // Last: the waiter may free the countdown, and a task's owner its
        // body and task, once it has seen the count reach zero.
        done->arrive();
    }
    nosv_task_type_t type_ = nullptr;
};

// One task running a callable. Submit it, then wait(); it may be submitted
// again after it completes. The destructor waits for a submitted task (see
// countdown::wait_in_destructor for an execution of a parallel task).
class task {
  public:
    template <typename F>
    task(const task_type& type, F&& fn)
        : body_(new task_type::body{std::forward<F>(fn), &done_, false}) {
        int rc = nosv_create(&task_, type.get(), sizeof(task_type::body*), NOSV_CREATE_NONE);
        if (rc < 0) {
            delete body_;
            throw error(rc, "nosv_create");
        }
        *static_cast<task_type::body**>(nosv_get_task_metadata(task_)) = body_;
    }
    ~task() {
        if (submitted_) done_.wait_in_destructor();
        nosv_destroy(task_, NOSV_DESTROY_NONE);
        delete body_;
    }
    task(const task&) = delete;
    task& operator=(const task&) = delete;

    void set_priority(int priority) { nosv_set_task_priority(task_, priority); }
    void set_affinity(const affinity& where) {
        nosv_affinity_t a = where.raw();
        nosv_set_task_affinity(task_, &a);
    }
    // Makes the task ready (flags as nosv_submit: IMMEDIATE, UNLOCKED...).
    void submit(nosv_flags_t flags = NOSV_SUBMIT_NONE) {
        done_.add();
        if (int rc = nosv_submit(task_, flags); rc < 0) {
            done_.arrive();
            throw error(rc, "nosv_submit");
        }
        submitted_ = true;
    }
    // Blocks until the task completed (pausing, when called from a task).
    // Throws coexec::error in an execution of a parallel task while the
    // task is outstanding.
    void wait() {
        done_.wait();
        submitted_ = false;
    }
    nosv_task_t get() const { return task_; }

  private:
    nosv_task_t task_ = nullptr;
    detail::countdown done_;
    task_type::body* body_;
    bool submitted_ = false;
};

// Runs many callables as tasks and waits for all of them.
class task_group {
  public:
    explicit task_group(const task_type& type) : type_(type) {}
    ~task_group() { all_done_.wait_in_destructor(); }
    task_group(const task_group&) = delete;
    task_group& operator=(const task_group&) = delete;

    // Submits `fn` as a new task of the group's type.
    template <typename F>
    void run(F&& fn) {
        auto* b = new task_type::body{std::forward<F>(fn), &all_done_, true};
        nosv_task_t t = nullptr;
        int rc = nosv_create(&t, type_.get(), sizeof(b), NOSV_CREATE_NONE);
        if (rc < 0) {
            delete b;
            throw error(rc, "nosv_create");
        }
        *static_cast<task_type::body**>(nosv_get_task_metadata(t)) = b;
        all_done_.add();
        rc = nosv_submit(t, NOSV_SUBMIT_NONE);
        if (rc < 0) {
            nosv_destroy(t, NOSV_DESTROY_NONE);
            delete b;
            all_done_.arrive();
            throw error(rc, "nosv_submit");
        }
    }
    // Blocks until every task run so far has completed (pausing, when called
    // from a task). Throws coexec::error in an execution of a parallel task
    // while tasks are outstanding. The destructor waits too (see
    // countdown::wait_in_destructor for a parallel task's execution).
    void wait() { all_done_.wait(); }

  private:
    const task_type& type_;
    detail::countdown all_done_;
};

} // namespace coexec
