// Whether the CPUs of a live segment are held by threads that can use them.
// The segment's invariants (invariants.hpp) are about its bytes; this is
// about the kernel's view of its holders, so it reads /proc and takes time.
#pragma once

#include "scheduler/shared_scheduler.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace coexec::scheduler {

struct HolderCheckOptions {
    // How long a suspect is watched before it is reported: a dead holder
    // must still hold its CPU then (the reaper frees one within about 100
    // ms), and an asleep one must not have run at all meanwhile.
    uint64_t grace_ns = 300'000'000;
};

// The Running CPUs that another process waits for (it has work that may
// run there) while their holder cannot use them, one sentence each:
// - the holder's process is gone (pid and start time no longer match) and
//   still holds the CPU after `grace_ns`;
// - the holder thread has held the CPU past its turn (a share turn, 8
//   quanta, plus the preemption delay) and is asleep in the kernel: it
//   used no CPU time during `grace_ns`, and still holds the CPU.
// Lock-free: the slots are read with relaxed loads (the demand through
// Policy::foreign_work()), and a suspect counts only when the same
// thread still holds the CPU, in the same stint, after the grace period.
// Sleeps for `grace_ns` only when a suspect was found.
std::vector<std::string> check_holders(const SharedScheduler& sched,
                                       const HolderCheckOptions& options = {});

} // namespace coexec::scheduler
