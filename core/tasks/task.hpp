// Task types and tasks: the private, per-process objects behind the opaque
// nosv_task_type_t and nosv_task_t handles.
#pragma once

#include <nosv.h>

#include "core/tasks/join_state.hpp"
#include "core/tasks/parallel.hpp"
#include "core/tasks/suspend.hpp"
#include "core/tasks/task_status.hpp"
#include "scheduler/shared_scheduler.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace coexec::core {
struct ThreadContext;
} // namespace coexec::core

struct nosv_task_type {
    nosv_task_run_callback_t run = nullptr;
    nosv_task_end_callback_t end = nullptr;
    nosv_task_completed_callback_t completed = nullptr;
    std::string label;
    void* metadata = nullptr;
    bool external = false;
    uint64_t magic = 0; // kTypeMagic while alive: catches stale handles
};

struct alignas(64) nosv_task {
    nosv_task_type* type = nullptr;
    coexec::core::TaskStatus status;     // life-cycle state and banked submits
    coexec::core::DeadlineWake deadline; // nosv_waitfor and its early wake-ups
    int priority = 0;
    nosv_affinity_t affinity{};
    // One extra count while the body runs, so the last decrement (the body's
    // end or an external event) completes the task exactly once.
    std::atomic<uint64_t> events{0};
    int32_t preempted_cpu = -1; // where a preempted task waits (push_preempted)
    // At most NOSV_MAX_METADATA_SIZE (nosv_create checks), so 16 bits do.
    uint16_t metadata_size = 0;
    bool had_events = false;
    // The thread this task lives on while started (attached thread, or the
    // worker that began running it); null for a task not yet started.
    coexec::core::ThreadContext* thread = nullptr;
    nosv_task* blocking_waiter = nullptr; // resumed when this task completes
    uint64_t ready_seq = 0;               // FIFO order among queues (ReadyQueue)
    nosv_task* intake_next = nullptr;     // link in ReadyQueue's lock-free stacks
    uint64_t magic = 0;                   // kTaskMagic while alive
    // Only for NOSV_CREATE_JOINABLE tasks: their runs, joiner and result.
    std::unique_ptr<coexec::core::JoinState> join;
    coexec::core::ParallelState par;    // parallel executions (core/tasks/parallel.hpp)
    coexec::core::SuspendState suspend; // nosv_suspend and its mode
    // Metadata follows the struct.
    void* metadata() { return metadata_size ? reinterpret_cast<char*>(this + 1) : nullptr; }
};

static_assert(NOSV_MAX_METADATA_SIZE <= UINT16_MAX);
// Two cache lines: a field added here should take the place of padding.
static_assert(sizeof(nosv_task) == 128);

namespace coexec::core {
inline constexpr uint64_t kTypeMagic = 0x7479706563786563ULL;
inline constexpr uint64_t kTaskMagic = 0x7461736b63786563ULL;
inline bool valid(const nosv_task_type* t) {
    return t && t->magic == kTypeMagic;
}
inline bool valid(const nosv_task* t) {
    return t && t->magic == kTaskMagic;
}
} // namespace coexec::core
