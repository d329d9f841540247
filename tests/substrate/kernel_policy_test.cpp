// The kernel policy of coexec's threads (CpuBinding, BatchGuess): they run
// under SCHED_BATCH, except after a wake-up that waited behind a program
// outside coexec on the same CPU.
#include "core/cpu/batch_guess.hpp"
#include "support.hpp"

#include <sched.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using coexec::core::BatchGuess;
using Change = BatchGuess::Change;

namespace {
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kStart = 1'000'000 * kMs; // any clock reading well past boot
} // namespace

TEST(BatchGuess, WakeUpsOnTimeKeepSchedBatch) {
    BatchGuess g;
    for (uint64_t i = 0; i < 1000; ++i)
        ASSERT_EQ(g.learn(BatchGuess::kLateNs - 1, kStart + i * kMs), Change::None);
    EXPECT_TRUE(g.batch());
}

TEST(BatchGuess, ALateWakeUpSwitchesToSchedOtherForAStay) {
    BatchGuess g;
    ASSERT_EQ(g.learn(BatchGuess::kLateNs, kStart), Change::ToOther);
    EXPECT_FALSE(g.batch());
    // Late or not, nothing changes during the stay.
    EXPECT_EQ(g.learn(5 * kMs, kStart + 1), Change::None);
    EXPECT_EQ(g.learn(0, kStart + BatchGuess::kMinStayNs - 1), Change::None);
    EXPECT_EQ(g.learn(0, kStart + BatchGuess::kMinStayNs), Change::ToBatch);
    EXPECT_TRUE(g.batch());
}

TEST(BatchGuess, EachLateTryDoublesTheStayUpToTheLongest) {
    BatchGuess g;
    uint64_t now = kStart;
    uint64_t stay = BatchGuess::kMinStayNs;
    for (int i = 0; i < 12; ++i) {
        ASSERT_EQ(g.learn(BatchGuess::kLateNs, now), Change::ToOther) << "try " << i;
        ASSERT_EQ(g.learn(0, now + stay - 1), Change::None) << "try " << i;
        now += stay;
        ASSERT_EQ(g.learn(0, now), Change::ToBatch) << "try " << i;
        stay = std::min(stay * 2, BatchGuess::kMaxStayNs);
    }
    EXPECT_EQ(stay, BatchGuess::kMaxStayNs);
}

TEST(BatchGuess, ALongTimeUnderSchedBatchStartsTheStaysOver) {
    BatchGuess g;
    uint64_t now = kStart;
    for (int i = 0; i < 4; ++i) { // the stay grows to 16 * kMinStayNs
        ASSERT_EQ(g.learn(BatchGuess::kLateNs, now), Change::ToOther);
        now += BatchGuess::kMaxStayNs;
        ASSERT_EQ(g.learn(0, now), Change::ToBatch);
    }
    now += BatchGuess::kMaxStayNs; // SCHED_BATCH since the last try
    ASSERT_EQ(g.learn(BatchGuess::kLateNs, now), Change::ToOther);
    EXPECT_EQ(g.learn(0, now + BatchGuess::kMinStayNs), Change::ToBatch);
}

namespace {

// Counts, for the calling thread, which policy it runs under now.
struct PolicyCount {
    std::atomic<int> batch{0}, other{0};
    void note() {
        (sched_getscheduler(0) == SCHED_BATCH ? batch : other)
            .fetch_add(1, std::memory_order_relaxed);
    }
};

} // namespace

// Regression: under SCHED_BATCH every wake-up of a thread granted a CPU
// where a busy program outside coexec runs waited out that program's time
// slice (a pause/submit ping-pong of the PoCL adapter's condition waits took
// 80 s instead of 4 s next to one `while True: pass`). Two attached threads
// on two CPUs, one shared with a spinner, wake each other through submit and
// pause: the one woken there must leave SCHED_BATCH.
TEST(KernelPolicy, ThreadsWokenBehindABusyProgramOutsideCoexecLeaveSchedBatch) {
    const std::vector<int> cpus = coexec::test::allowed_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, one shared with a busy program";
    coexec::test::Spinner spinner(cpus[1]); // forked before the instance: it is not a member
    coexec::test::Instance in(
        "topology.binding=" + std::to_string(cpus[0]) + "," + std::to_string(cpus[1]), false);
    constexpr int kRounds = 400;
    std::atomic<nosv_task_t> task[2] = {nullptr, nullptr};
    PolicyCount seen;
    auto player = [&](int me) {
        nosv_task_t self = nullptr;
        ASSERT_EQ(nosv_attach(&self, nullptr, "player", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        task[me].store(self);
        while (!task[1 - me].load())
            std::this_thread::yield();
        for (int i = 0; i < kRounds; ++i) {
            // A submit that comes before the pause pays for it.
            if (me == 0) {
                EXPECT_EQ(nosv_submit(task[1].load(), NOSV_SUBMIT_NONE), NOSV_SUCCESS);
            }
            EXPECT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
            seen.note();
            if (me == 1) {
                EXPECT_EQ(nosv_submit(task[0].load(), NOSV_SUBMIT_NONE), NOSV_SUCCESS);
            }
        }
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
        // Detach gives SCHED_OTHER back, whichever policy the thread had.
        EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);
    };
    std::thread a(player, 0), b(player, 1);
    a.join();
    b.join();
    EXPECT_GT(seen.batch.load(), 0) << "attached threads run under SCHED_BATCH";
    EXPECT_GT(seen.other.load(), 0) << "no thread left SCHED_BATCH next to the spinner";
}
