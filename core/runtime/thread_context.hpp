// What coexec knows about one of its threads, private to the process.
#pragma once

#include "core/cpu/batch_guess.hpp"
#include "core/cpu/hand_back.hpp"
#include "core/interpose/affinity.hpp"
#include "core/runtime/runtime_section.hpp"
#include "core/tasks/task.hpp"
#include "scheduler/keep_word.hpp"
#include "shm/layout.hpp"

#include <atomic>
#include <memory>
#include <sched.h>
#include <thread>
#include <utility>
#include <vector>

namespace coexec::core {

// Its fields are grouped by owner: the part that writes a group's fields
// is the one named above it, in that part's files. Where another part must
// change a group at an event of its own (a grant taken, a CPU lost), it
// calls the group's method named for that event; `grep '\.held\.'` and the
// like find every use.
struct ThreadContext {
    // ---- who the thread is: set when it enters coexec (WorkerPool for a
    // worker, Runtime::attach for an attached thread), read-only after.
    int32_t slot = shm::kNone; // the thread's slot in the segment
    bool worker = false;
    std::thread thread; // workers only

    // ---- the CPU it holds. Owner: CpuHandover (core/cpu/cpu_handover.cpp).
    struct HeldCpu {
        int32_t cpu = shm::kNone; // logical CPU held now
        // Logical CPU held last (set at each grant). Read by the queue under
        // its mutex while the thread waits in the queue: the write came
        // before the thread queued itself, and the next one comes after it
        // was popped.
        int32_t last = shm::kNone;
        nosv_task* assigned = nullptr; // unbound task handed over with a CPU
        // The thread gave its CPU to another thread (a teammate, or another
        // process's) and waits for one again; its next wait_for_cpu() may
        // yield before it sleeps, as `hand_back` guesses.
        bool handed_off = false;
        HandBackGuess hand_back;
        // A grant taken (CpuBinding::bind_to()).
        void took(int32_t c) { cpu = last = c; }
        // The CPU is no longer held, outside a hand-over: an eviction
        // (IdlePolicy), a give-way (Preemption), a CPU kept or lent while the
        // thread runs code of its own (CpuBinding). Returns it.
        int32_t lost() { return std::exchange(cpu, shm::kNone); }
        // The task that came with the CPU, taken to run it.
        nosv_task* take_assigned() { return std::exchange(assigned, nullptr); }
    } held;

    // ---- its CPU, parked while its task is paused (CpuTable::park()).
    // Owner: CpuHandover (park(), sleep_parked(), unpark()); a submitter of
    // the paused task moves `state` from Asleep to Resumed
    // (ReadyWork::resume_parked()).
    struct Park {
        enum State : uint32_t { None = 0, Asleep = 1, Resumed = 2 };
        std::atomic<uint32_t> state{None};
        // When the submit resumed the task: stored before `state` (release).
        std::atomic<uint64_t> resumed_ns{0};
        scheduler::KeepWord word; // the Parked period of `held.cpu`
        bool slept = false;       // sleep_parked() waited for the resume
    } park;

    // ---- outside coexec and the kernel's view. Owner: CpuBinding
    // (core/cpu/cpu_binding.cpp).
    struct Binding {
        int32_t lent_cpu = shm::kNone; // CPU lent by coexec_lend_cpu, maybe taken since
        int32_t kept_cpu = shm::kNone; // CPU kept by coexec_keep_cpu, maybe taken since
        scheduler::KeepWord kept_word; // the keep period of kept_cpu
        // The thread is outside coexec (coexec_block_enter, or a thread that
        // keeps its affinity after coexec_lend_cpu/keep_cpu): a mask it sets
        // itself goes to the kernel too. Only the thread reads and writes it.
        bool own_affinity_applies = false;
        bool pinned = false; // a program thread, pinned by bind_to()
        // CpuBinding::adopt() set SCHED_BATCH, and coexec chooses the
        // thread's policy until detach (`batch_guess` may have it under
        // SCHED_OTHER now).
        bool batch_policy = false;
        BatchGuess batch_guess;
    } binding;

    // ---- the work it runs. Owner: TaskOps (core/tasks/task_ops.cpp,
    // task_run.cpp, parallel_ops.cpp, suspend.cpp).
    struct Work {
        nosv_task* current = nullptr;               // what nosv_self() returns
        nosv_task* immediate = nullptr;             // NOSV_SUBMIT_IMMEDIATE successor
        const nosv_task_type* shown_type = nullptr; // whose label the slot shows
        // The parallel execution this thread runs (nosv_get_execution_id).
        uint32_t execution_id = 0;
        // The hand-over runs the successor next: it is taken.
        nosv_task* take_immediate() { return std::exchange(immediate, nullptr); }
        // An attached thread runs its own task, which shows `shown`.
        void run_attached(nosv_task* own, const nosv_task_type* shown) {
            current = own;
            shown_type = shown;
        }
    } work;

    // ---- ready work the thread holds back. Owner: ReadyWork
    // (core/tasks/ready_work.hpp, ready_work.cpp).
    struct Pending {
        // Tasks a worker took from a long queue in one go (see pop_batch);
        // they go back to the queue before the worker blocks or loses its
        // CPU.
        static constexpr size_t kBatch = 16;
        nosv_task* batch[kBatch] = {};
        size_t batch_next = 0, batch_end = 0;
        // The submit window of the task running here (a started task stays
        // on its thread): its size (nosv_set_submit_window_size, back to 1
        // when the body ends) and the submits it holds, each with its
        // UNLOCKED hint, flushed before the task leaves the CPU.
        uint32_t window_size = 1;
        std::vector<std::pair<nosv_task*, bool>> window;
    } pending;
    bool has_batch() const { return pending.batch_next < pending.batch_end; }

    // ---- an attached thread. Owner: Runtime (core/runtime/attach.cpp).
    struct Attach {
        bool attached = false;
        int nesting = 0;                      // nested nosv_attach calls a nosv_detach undoes first
        nosv_task* task = nullptr;            // an attached thread's own task
        bool keeps_affinity = false;          // attached with COEXEC_ATTACH_KEEP_AFFINITY
        std::unique_ptr<nosv_task_type> type; // carries the attach label
        // nosv_attach again (nOS-V's nesting): the same task.
        nosv_task* nest() {
            ++nesting;
            return task;
        }
        // nosv_detach: true if it undid an inner attach (the thread stays).
        bool unnest() {
            if (nesting == 0) return false;
            --nesting;
            return true;
        }
    } attach;

    // A program thread coexec hosts (program_threads.hpp). Owner: Preemption.
    bool program = false;

    // The mask the thread shows (sched_getaffinity & co.), restored by
    // detach. Owner: the AffinityRegistry (core/interpose/affinity.*) and the
    // interposers; its tid and pthread are set when the thread enters.
    AffinityRecord affinity;
};

// The calling thread's context, or null for threads coexec does not know.
ThreadContext*& this_thread_context();

// The opposite, for user code that coexec calls (a task body): preemptible.
class UserSection {
  public:
    UserSection() : saved_(runtime_depth()) {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        runtime_depth() = 0;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~UserSection() {
        std::atomic_signal_fence(std::memory_order_seq_cst);
        runtime_depth() = saved_;
        std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    UserSection(const UserSection&) = delete;
    UserSection& operator=(const UserSection&) = delete;

  private:
    int saved_;
};

} // namespace coexec::core
