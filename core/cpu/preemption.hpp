// The preemption safety net. coexec schedules cooperatively: a thread gives
// its CPU away only at a scheduling point. A thread that spins in user code
// (`while (!flag);`) until a thread of its own process runs would keep its
// CPU forever; two such processes sharing the CPUs deadlock, where the
// kernel would have time-shared them. So a process that waits for a CPU
// which another process has held past its turn (a quantum, or a share turn
// of Policy::kShareTurnQuanta quanta when the waiter is not short
// of CPUs) plus SegmentConfig::preempt_after_ns, without reaching a
// scheduling point, signals the holder (Policy::overdue_holder());
// the holder's handler gives the CPU to the next process in round-robin
// order and waits to get that same CPU back.
//
// Only other processes take the CPU, and the task resumes on the same CPU,
// so a task never sees another task of its own process take its place (its
// per-CPU data stays its own), exactly as if the kernel had preempted it.
// The one exception is a program thread that coexec hosts (the main thread,
// or with COEXEC_HOST_THREADS=all any thread the program starts; see
// program_threads.hpp): it runs no runtime's protocol and may spin in user
// code for work of its own process, so that work may take its CPU too.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/cpu/cpu_binding.hpp"
#include "core/runtime/membership.hpp"
#include "core/runtime/thread_context.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace coexec::core {

class CpuHandover;
class ReadyWork;
class WorkerPool;

class Preemption {
  public:
    // A holder that gives way queues its task in `ready`, counts as blocked
    // in `workers`, and waits for its CPU through `handover`; one asleep
    // lends its CPU through `binding`.
    Preemption(const Membership& member, ReadyWork& ready, WorkerPool& workers,
               CpuHandover& handover, std::optional<CpuBinding>& binding)
        : member_(member), ready_(ready), workers_(workers), handover_(handover),
          binding_(binding) {}

    // Installs the signal handler unless the program has one of its own;
    // true when this process's threads give way to it.
    bool install();
    // This process no longer gives way (it stops).
    void uninstall();
    // The monitor's part: signals holders of CPUs this process has long
    // waited for: another process's, and this process's program threads
    // (host_program_thread()), which give way to the work of their
    // own process too. Only other processes take the CPU of any other
    // thread of this process: its runtimes wait at their own scheduling
    // points, while a program thread may spin for that work in user code.
    void ask_overdue_holders();

    // The monitor's part, at every period: a program thread that holds a
    // CPU while it sleeps in the kernel where no wrapper sees it (a raw
    // system call, sigsuspend, another library's futex) for a whole period
    // is signalled; it lends its CPU out from its handler and takes one back
    // at its next wrapped call (program_threads.hpp). One look per CPU this
    // process holds with a program thread on it.
    void ask_sleeping_program_threads();

    // Around fork() in the forking thread (Runtime's pthread_atfork
    // handlers): between them glibc holds every malloc arena's lock and the
    // stdio list lock, so a thread that gave way there would wait for a CPU
    // with them held, while the threads of its process that run on its CPUs
    // block on them in the kernel and never pass a CPU on. The handler
    // ignores the signal there; the next period asks again.
    static void fork_begins();
    static void fork_ends();

    // ---- program threads (program_threads.hpp) ------------------------
    // The calling attached thread is (or no longer is) a program thread
    // that coexec hosts: the safety net then also gives its CPU to this
    // process's own work when it holds it too long.
    void host_program_thread(ThreadContext& self);
    void unhost_program_thread(ThreadContext& self);

  private:
    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }
    int32_t proc() const { return member_.proc(); }
    shm::Segment* segment() const { return &member_.segment(); }

    void ask_overdue_program_threads(uint64_t now);
    // Whether thread slot `t` (of this process) is a hosted program thread.
    bool is_program(int32_t t) const {
        return t >= 0 && t < shm::kMaxThreads &&
               program_[size_t(t)].hosted.load(std::memory_order_relaxed);
    }
    static void on_signal(int);
    // In the handler: the program thread lends its CPU and goes back to the
    // sleep the signal interrupted.
    void lend_while_asleep(ThreadContext& self);
    // In the handler, in user code: gives the caller's CPU to the next
    // other process with work for it, then waits to get that CPU back.
    void give_way(ThreadContext& self);

    const Membership& member_;
    ReadyWork& ready_;
    WorkerPool& workers_;
    CpuHandover& handover_;
    std::optional<CpuBinding>& binding_;
    // Per thread slot of this process: whether a hosted program thread has
    // the slot, and whether the monitor asked it to lend the CPU it sleeps
    // on. `hosted` is written by the thread itself and read by the monitor
    // (relaxed: a stale read only delays or skips one request of the safety
    // net, whose handler checks the thread's own state again). `lend_asked`
    // is set by the monitor before it signals the thread (release) and
    // taken by the thread's handler (acquire).
    struct ProgramSlot {
        std::atomic<bool> hosted{false};
        std::atomic<bool> lend_asked{false};
    };
    std::unique_ptr<ProgramSlot[]> program_{new ProgramSlot[size_t(shm::kMaxThreads)]};
    // How many program threads are hosted: the monitor looks for them only
    // when there are some.
    std::atomic<int> programs_{0};
    // install() put our handler in place (read by the monitor).
    std::atomic<bool> installed_{false};
    // What the monitor saw on each CPU at its last look: the program thread
    // that held it, since when, and that thread's run time then. Only the
    // monitor uses it.
    struct Sighting {
        int32_t thread = -1;
        uint64_t since_ns = 0;
        int64_t run_ns = -1;
    };
    std::vector<Sighting> asleep_seen_;
};

} // namespace coexec::core
