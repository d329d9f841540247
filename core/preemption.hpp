// The preemption safety net. coexec schedules cooperatively: a thread gives
// its CPU away only at a scheduling point. A thread that spins in user code
// (`while (!flag);`) until a thread of its own process runs would keep its
// CPU forever; two such processes sharing the CPUs deadlock, where the
// kernel would have time-shared them. So a process that waits for a CPU
// which another process has held past its turn (a quantum, or a share turn
// of SharedScheduler::kShareTurnQuanta quanta when the waiter is not short
// of CPUs) plus SegmentConfig::preempt_after_ns, without reaching a
// scheduling point, signals the holder (SharedScheduler::overdue_holder());
// the holder's handler gives the CPU to the next process in round-robin
// order and waits to get that same CPU back.
//
// Only other processes take the CPU, and the task resumes on the same CPU,
// so a task never sees another task of its own process take its place (its
// per-CPU data stays its own), exactly as if the kernel had preempted it.
#pragma once

#include "core/thread_context.hpp"

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
    // waited for.
    void ask_overdue_holders();

  private:
    static void on_signal(int);
    // In the handler, in user code: gives the caller's CPU to the next
    // other process with work for it, then waits to get that CPU back.
    void give_way(ThreadContext& self);

    Runtime& rt_;
};

} // namespace coexec::core
