// Small RAII helpers over the nOS-V C API for the benchmark children. A
// failing call prints the nosv error and ends the child process at once: a
// benchmark has nothing sensible to continue with, and task callbacks cannot
// propagate exceptions.
#pragma once

#include "options.hpp"

#include "shm/segment.hpp"

#include <nosv.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace coexec::bench {

// Ends the calling process (exit status 1) when `rc` is a nosv error.
void check(int rc, const char* what);

// Ends the calling process (exit status 1) with `message` on stderr.
[[noreturn]] void fail(const std::string& message);

// Monotonic nanoseconds.
inline uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

// Makes every later nosv_init() in this process and its children use the
// segment `name` (so the benchmarks neither disturb nor are disturbed by other
// coexec users), adding `extra` settings ("key=value,...") after any
// NOSV_CONFIG_OVERRIDE the user gave.
void use_segment(const std::string& name, const std::string& extra = "");

// Options that attach to the existing segment `name` (never create it).
shm::SegmentOptions segment_options(const std::string& name);

// The lock acquisitions of every member of segment `name` so far
// (Header::lock_acquisitions), read through a mapping of its own. Open it
// once the segment exists (after nosv_init()).
class LockCounter {
  public:
    explicit LockCounter(const std::string& segment);
    uint64_t read() const;

  private:
    shm::SegmentMapping map_;
};

// nosv_init() for the guard's lifetime.
class Runtime {
  public:
    Runtime() { check(nosv_init(), "nosv_init"); }
    ~Runtime() { check(nosv_shutdown(), "nosv_shutdown"); }
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;
};

// The calling thread attached (holding a CPU) for the guard's lifetime.
class Attached {
  public:
    explicit Attached(const char* label, nosv_affinity_t* affinity = nullptr) {
        check(nosv_attach(&task_, affinity, label, NOSV_ATTACH_NONE), "nosv_attach");
    }
    ~Attached() { check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach"); }
    Attached(const Attached&) = delete;
    Attached& operator=(const Attached&) = delete;
    nosv_task_t task() const { return task_; }

  private:
    nosv_task_t task_ = nullptr;
};

// A task type with run and completed callbacks for the guard's lifetime.
class TaskType {
  public:
    TaskType(nosv_task_run_callback_t run, nosv_task_completed_callback_t completed,
             const char* label) {
        check(nosv_type_init(&type_, run, nullptr, completed, label, nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              "nosv_type_init");
    }
    ~TaskType() { check(nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy"); }
    TaskType(const TaskType&) = delete;
    TaskType& operator=(const TaskType&) = delete;
    nosv_task_type_t get() const { return type_; }

  private:
    nosv_task_type_t type_ = nullptr;
};

// The system CPU id to bind strict tasks to: --cpu if coexec manages it (else
// the process fails with a clear message), otherwise the first managed CPU.
// Needs nosv_init().
int strict_cpu(const Options& options);

} // namespace coexec::bench
