// The private ready queue: priorities, FIFO order, placement, stealing and
// the shared counters that mirror it.
#include "core/ready_queue.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace coexec::core;
using coexec::scheduler::Placement;

namespace {
struct QueueTest : ::testing::Test {
    std::unique_ptr<coexec::shm::ProcSlot> slot = std::make_unique<coexec::shm::ProcSlot>();
    ReadyQueue q{*slot, 2, 1};
    nosv_task tasks[6];
    nosv_task* t(int i, int prio = 0) {
        tasks[i].priority = prio;
        return &tasks[i];
    }
};
} // namespace

TEST_F(QueueTest, HigherPriorityFirstThenFifo) {
    q.push(t(0), {}, false);
    q.push(t(1, 5), {}, false);
    q.push(t(2), {}, false);
    q.push(t(3, 5), {}, false);
    EXPECT_EQ(slot->ready_total.load(), 4);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), &tasks[3]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
    EXPECT_EQ(slot->ready_any.load(), 0);
}

TEST_F(QueueTest, UnlockedGoesFirstAmongEqualPriority) {
    q.push(t(0), {}, false);
    q.push(t(1), {}, true);
    EXPECT_EQ(q.pop(1, 0), &tasks[1]);
}

TEST_F(QueueTest, StrictCpuWorkStaysOnItsCpu) {
    Placement on1{Placement::Kind::Cpu, 1, true};
    q.push(t(0), on1, false);
    EXPECT_EQ(slot->ready_cpu[1].load(), 1);
    EXPECT_EQ(slot->ready_any.load(), 0);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
    EXPECT_EQ(slot->ready_cpu[1].load(), 0);
}

TEST_F(QueueTest, PreferredWorkIsStolenByAnIdleCpu) {
    Placement pref1{Placement::Kind::Cpu, 1, false};
    q.push(t(0), pref1, false);
    EXPECT_EQ(slot->ready_any.load(), 1); // runnable anywhere
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
}

TEST_F(QueueTest, LocalWorkBeatsStealingAndPriorityAcrossQueues) {
    q.push(t(0), {Placement::Kind::Cpu, 1, false}, false);
    q.push(t(1, 1), {Placement::Kind::Cpu, 0, true}, false);
    q.push(t(2, 9), {}, false);
    EXPECT_EQ(q.top_priority(0, 0), 9);
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
}

TEST_F(QueueTest, RemoveTakesOutAQueuedTask) {
    q.push(t(0), {}, false);
    q.push(t(1), {}, false);
    EXPECT_TRUE(q.remove(&tasks[0], {}));
    EXPECT_FALSE(q.remove(&tasks[0], {}));
    EXPECT_EQ(slot->ready_total.load(), 1);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
}
