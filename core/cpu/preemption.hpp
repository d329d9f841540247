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
// see program_threads.hpp): it runs no runtime's protocol and may spin in
// user code for work of its own process, so that work may take its CPU too.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/runtime/thread_context.hpp"

namespace coexec::core {

class Runtime;

class Preemption {
  public:
    explicit Preemption(Runtime& rt) : rt_(rt) {}

    // Installs the signal handler unless the program has one of its own;
    // true when this process's threads give way to it.
    bool install();
    // This process no longer gives way (it stops).
    void uninstall();
    // The monitor's part: signals holders of CPUs this process has long
    // waited for: another process's, and this process's program thread
    // (Runtime::host_program_thread()), which gives way to the work of its
    // own process too. Only other processes take the CPU of any other
    // thread of this process: its runtimes wait at their own scheduling
    // points, while a program thread may spin for that work in user code.
    void ask_overdue_holders();

    // The monitor's part, at every period: a program thread that holds a
    // CPU while it sleeps in the kernel where no wrapper sees it (a raw
    // system call, sigsuspend) for a whole period is signalled; it lends
    // its CPU out from its handler and takes one back at its next wrapped
    // call (program_threads.hpp).
    void ask_sleeping_program_thread();

    // Around fork() in the forking thread (Runtime's pthread_atfork
    // handlers): between them glibc holds every malloc arena's lock and the
    // stdio list lock, so a thread that gave way there would wait for a CPU
    // with them held, while the threads of its process that run on its CPUs
    // block on them in the kernel and never pass a CPU on. The handler
    // ignores the signal there; the next period asks again.
    static void fork_begins();
    static void fork_ends();

  private:
    void ask_overdue_program_thread(uint64_t now);
    static void on_signal(int);
    // In the handler: the program thread lends its CPU and goes back to the
    // sleep the signal interrupted.
    static void lend_while_asleep(Runtime& rt, ThreadContext& self);
    // In the handler, in user code: gives the caller's CPU to the next
    // other process with work for it, then waits to get that CPU back.
    void give_way(ThreadContext& self);

    Runtime& rt_;
    // install() put our handler in place (read by the monitor).
    std::atomic<bool> installed_{false};
    // What the monitor saw of the program thread at its last look: the CPU
    // it held, since when, and its run time then. Only the monitor uses it.
    struct Sighting {
        int32_t cpu = -1;
        uint64_t since_ns = 0;
        int64_t run_ns = -1;
    } asleep_seen_;
};

} // namespace coexec::core
