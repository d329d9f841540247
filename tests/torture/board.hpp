// The stats board: memory the torture harness shares with its member
// processes (a memfd the members inherit), one slot per live member. A member
// counts what it does in its slot; the harness adds a slot up once the member
// is gone, so even a SIGKILLed member's operations are counted.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace coexec::torture {

// Every kind of operation a member counts.
enum class Op : int {
    InitNested,     // nosv_init while initialised, and its nosv_shutdown
    InitCycle,      // a full nosv_init ... nosv_shutdown round of the process
    Attach,         // nosv_attach
    Detach,         // nosv_detach
    Create,         // nosv_create
    Destroy,        // nosv_destroy
    SubmitNone,     // nosv_submit(NONE)
    SubmitUnlocked, // nosv_submit(UNLOCKED)
    SubmitImmediate,
    SubmitBlocking,
    SubmitInline,
    SubmitDeadlineWake, // a waitfor ended early by nosv_submit(DEADLINE_WAKE)
    DeadlineWakeLate,   // that submit came after the wait's own deadline
    Resume,             // nosv_submit of a paused task
    Pause,
    Yield,
    Schedpoint,
    Waitfor,
    AffinityCpuStrict, // a task or attach with this affinity
    AffinityCpuPreferred,
    AffinityNumaStrict,
    AffinityNumaPreferred,
    Priority, // a task submitted with a non-zero priority
    BlockEnter,
    LendCpu,
    KeepCpu,
    BlockExit,
    EventIncrease,
    EventDecrease,
    Query,     // coexec_spare_cpus, coexec_cpu_wanted, nosv_self, error-code probes
    TaskRun,   // task bodies run
    Completed, // completed callbacks
    Count
};

inline constexpr int kOpCount = int(Op::Count);

// Names for the report, in Op order.
inline constexpr std::array<const char*, kOpCount> kOpNames = {"init (nested)",
                                                               "init/shutdown cycle",
                                                               "attach",
                                                               "detach",
                                                               "create",
                                                               "destroy",
                                                               "submit",
                                                               "submit unlocked",
                                                               "submit immediate",
                                                               "submit blocking",
                                                               "submit inline",
                                                               "submit deadline-wake",
                                                               "deadline-wake late",
                                                               "resume",
                                                               "pause",
                                                               "yield",
                                                               "schedpoint",
                                                               "waitfor",
                                                               "affinity cpu strict",
                                                               "affinity cpu pref.",
                                                               "affinity numa strict",
                                                               "affinity numa pref.",
                                                               "priority",
                                                               "block enter",
                                                               "lend cpu",
                                                               "keep cpu",
                                                               "block exit",
                                                               "event increase",
                                                               "event decrease",
                                                               "queries",
                                                               "task bodies run",
                                                               "tasks completed"};

// A member's progress, as the harness sees it.
// Stuck: its tasks did not complete in time; it waits for the harness to
// look at it (and kill it).
enum class Phase : uint32_t { Starting = 0, Running = 1, Draining = 2, Done = 3, Stuck = 4 };

struct alignas(64) MemberSlot {
    std::array<std::atomic<uint64_t>, kOpCount> ops;
    std::atomic<Phase> phase;
    std::atomic<int64_t> in_flight; // tasks submitted and not completed yet
};

inline constexpr int kBoardSlots = 256;

struct Board {
    std::array<MemberSlot, kBoardSlots> slots;
};

// Counting: relaxed, the harness only reads totals once a member is gone
// (its exit orders every store before the read) or as a live hint.
inline void count(MemberSlot& slot, Op op, uint64_t n = 1) {
    slot.ops[size_t(op)].fetch_add(n, std::memory_order_relaxed);
}

} // namespace coexec::torture
