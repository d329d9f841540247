// A member of the torture run: one process that does random operations
// through the public C API (nosv.h, coexec/ext.h) only, until its lifetime
// is over, then finishes its work and leaves.
#pragma once

#include "board.hpp"

#include <cstdint>
#include <sys/types.h>

namespace coexec::torture {

// The random workload of one process.
struct WorkloadArgs {
    int threads = 1;          // driver threads
    uint64_t seed = 0;        // for the random choices
    uint32_t lifetime_ms = 0; // how long the drivers keep issuing operations
    int rounds = 1;           // full init ... shutdown cycles within the lifetime
    uint32_t drain_ms = 0;    // how long the drivers may wait for their tasks
    // When stuck (tasks not completed in time): report, mark the slot
    // Phase::Stuck and wait to be killed (a harness looks at the process
    // first), rather than exit at once.
    bool wait_when_stuck = false;
};

struct MemberArgs {
    WorkloadArgs work;
    int board_fd = -1;  // the inherited stats board (a memfd)
    int slot = 0;       // this member's slot on the board
    pid_t parent = 0;   // the harness; the member dies with it
    bool sweep = false; // only join, attach, detach and leave
};

// Exit codes of a member, besides 0 (success).
inline constexpr int kExitApiError = 2;     // a call returned an unexpected code
inline constexpr int kExitDrainTimeout = 3; // its tasks did not complete in time
inline constexpr int kExitSetup = 4;        // bad arguments or no board

// Runs the workload in this process: `threads` drivers do random operations
// through the C API (nosv_init and the last nosv_shutdown included) for
// `lifetime_ms`, then wait for their tasks. Counts into `stats`. Returns 0;
// on a failed check it prints why on stderr and ends the process with one
// of the exit codes above (other threads are still inside coexec then).
int run_workload(const WorkloadArgs& args, MemberSlot& stats);

// Runs the member in this process and returns its exit code. Prints why on
// stderr when it fails.
int run_member(const MemberArgs& args);

} // namespace coexec::torture
