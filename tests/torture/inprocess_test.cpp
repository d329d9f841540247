// The torture workload in one process: many threads attach, detach, submit
// (every flag), pause, yield, wait, block and lend at random on a private
// segment (isolation level "process"), so the whole runtime (ready queue,
// intake, worker pool, scheduling points) runs under one sanitizer's eye:
// `make test-tsan` runs it under ThreadSanitizer.
#include "board.hpp"
#include "member.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace coexec::torture {
namespace {

uint64_t ops(const MemberSlot& s, Op op) {
    return s.ops[size_t(op)].load(std::memory_order_relaxed);
}

void run(int threads, uint64_t seed, uint32_t lifetime_ms, int rounds) {
    // A segment of this process alone: nothing in /dev/shm, no other process.
    ::setenv("NOSV_CONFIG_OVERRIDE", "shared_memory.isolation_level=process", 1);
    MemberSlot stats{};
    WorkloadArgs args;
    args.threads = threads;
    args.seed = seed;
    args.lifetime_ms = lifetime_ms;
    args.rounds = rounds;
    args.drain_ms = 60'000;
    ASSERT_EQ(run_workload(args, stats), 0);
    EXPECT_EQ(stats.in_flight.load(), 0);
    // Every submit ran its task once and completed it once.
    const uint64_t submits = ops(stats, Op::SubmitNone) + ops(stats, Op::SubmitUnlocked) +
                             ops(stats, Op::SubmitImmediate) + ops(stats, Op::SubmitBlocking) +
                             ops(stats, Op::SubmitInline);
    EXPECT_EQ(ops(stats, Op::TaskRun), submits);
    EXPECT_EQ(ops(stats, Op::Completed), submits);
    EXPECT_EQ(ops(stats, Op::Pause), ops(stats, Op::Resume));
    EXPECT_EQ(ops(stats, Op::EventIncrease), ops(stats, Op::EventDecrease));
    EXPECT_EQ(ops(stats, Op::InitCycle), uint64_t(rounds));
    // The run did exercise the operations it is about.
    for (Op op : {Op::Attach, Op::Detach, Op::SubmitNone, Op::SubmitImmediate, Op::SubmitBlocking,
                  Op::SubmitInline, Op::Pause, Op::Yield, Op::Waitfor, Op::BlockEnter, Op::LendCpu,
                  Op::KeepCpu, Op::EventIncrease})
        EXPECT_GT(ops(stats, op), 0u) << kOpNames[size_t(op)];
    std::printf("%llu submits, %llu pauses, %llu attaches\n", (unsigned long long)submits,
                (unsigned long long)ops(stats, Op::Pause),
                (unsigned long long)ops(stats, Op::Attach));
}

TEST(InProcess, ManyThreadsDoRandomOperations) {
    run(8, 1, 3000, 1);
}

TEST(InProcess, InitAndShutdownTwiceWithThreadsAtWork) {
    run(4, 2, 2000, 2);
}

} // namespace
} // namespace coexec::torture
