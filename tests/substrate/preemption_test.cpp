// The preemption safety net: a process that holds a CPU and busy-waits in
// user code, never reaching a scheduling point, gives way to another process
// waiting for that CPU once it is past its quantum plus preempt_after_ns.
#include "support.hpp"

#include "shm/segment.hpp"

#include <nosv.h>
#include <nosv/hwinfo.h>

#include <csignal>
#include <ctime>

using namespace coexec;
using coexec::test::Shared;
using namespace std::chrono_literals;

namespace {

struct Control {
    std::atomic<int> holder_cpu_before{-1}, holder_cpu_after{-1};
    std::atomic<bool> holder_spinning{false};
    std::atomic<bool> waiter_ran{false};
    std::atomic<bool> waiter_ran_during_spin{false};
    std::atomic<int64_t> holder_slept_ms{-1};
};

// On one CPU: attaches (taking the CPU), then busy-waits in user code until
// the waiter has run, for at most `limit`. Exit 0 if the waiter ran meanwhile.
int spinning_holder(Control& ctl, std::chrono::milliseconds limit) {
    if (nosv_init() != 0) return 11;
    nosv_task_t task;
    if (nosv_attach(&task, nullptr, "holder", 0) != 0) return 12;
    ctl.holder_cpu_before = sched_getcpu();
    ctl.holder_spinning = true;
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!ctl.waiter_ran.load() && std::chrono::steady_clock::now() < deadline) {
    }
    ctl.waiter_ran_during_spin = ctl.waiter_ran.load();
    ctl.holder_cpu_after = sched_getcpu();
    nosv_detach(0);
    return nosv_shutdown() == 0 ? 0 : 13;
}

// Waits until the holder spins, then attaches (which needs the CPU).
int waiter(Control& ctl) {
    while (!ctl.holder_spinning.load())
        std::this_thread::sleep_for(1ms);
    if (nosv_init() != 0) return 21;
    nosv_task_t task;
    if (nosv_attach(&task, nullptr, "waiter", 0) != 0) return 22;
    ctl.waiter_ran = true;
    nosv_detach(0);
    return nosv_shutdown() == 0 ? 0 : 23;
}

// A spinning holder (for at most `limit`) and a waiter, in two processes on
// one CPU; both must finish and succeed.
void run_holder_and_waiter(Control& ctl, std::chrono::milliseconds limit) {
    pid_t holder = test::fork_child([&] { return spinning_holder(ctl, limit); });
    pid_t other = test::fork_child([&] { return waiter(ctl); });
    EXPECT_EQ(test::wait_child(holder, 30s), 0);
    EXPECT_EQ(test::wait_child(other, 30s), 0);
}

// Two tasks that each spin in user code for the other's flag, in two
// processes on one CPU: the shape of two MPI ranks whose tasks wait in
// MPI_Waitall for each other's message.
struct Exchange {
    std::atomic<bool> first_spinning{false};
    std::atomic<bool> from_second{false}; // set by the second, awaited by the first
    std::atomic<bool> from_first{false};  // set by the first, awaited by the second
};

Exchange* g_exchange = nullptr;
std::atomic<bool> g_task_done{false};

// The first process's task spins until the second's flag, then sets its own.
void first_task(nosv_task_t) {
    g_exchange->first_spinning = true;
    while (!g_exchange->from_second.load()) {
    }
    g_exchange->from_first = true;
}

// The second's sets its flag, then spins until the first's.
void second_task(nosv_task_t) {
    g_exchange->from_second = true;
    while (!g_exchange->from_first.load()) {
    }
}

void task_done(nosv_task_t) {
    g_task_done = true;
}

// Runs one task of `body` and waits, unattached, until it completed.
int run_one_task(Exchange& ex, void (*body)(nosv_task_t)) {
    g_exchange = &ex;
    if (nosv_init() != 0) return 31;
    nosv_task_type_t type;
    nosv_task_t task;
    if (nosv_type_init(&type, body, nullptr, task_done, "exchange", nullptr, nullptr,
                       NOSV_TYPE_INIT_NONE) != 0 ||
        nosv_create(&task, type, 0, NOSV_CREATE_NONE) != 0 ||
        nosv_submit(task, NOSV_SUBMIT_NONE) != 0)
        return 32;
    while (!g_task_done.load())
        std::this_thread::sleep_for(1ms);
    nosv_destroy(task, NOSV_DESTROY_NONE);
    nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
    return nosv_shutdown() == 0 ? 0 : 33;
}

} // namespace

TEST(Preemption, ASpinningHolderGivesWayToAnotherProcess) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=20000000");
    Shared<Control> ctl;
    run_holder_and_waiter(*ctl, 20s);
    EXPECT_TRUE(ctl->waiter_ran_during_spin) << "the spinning holder never gave way";
    // It got the same CPU back (the only one here, and the one it was bound to).
    EXPECT_EQ(ctl->holder_cpu_after.load(), ctl->holder_cpu_before.load());
}

TEST(Preemption, OffMeansAHolderKeepsItsCpuUntilASchedulingPoint) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=0");
    Shared<Control> ctl;
    run_holder_and_waiter(*ctl, 1500ms);
    EXPECT_FALSE(ctl->waiter_ran_during_spin);
    EXPECT_TRUE(ctl->waiter_ran) << "the waiter runs once the holder detaches";
}

// A holder asleep in the kernel is not spinning: the signal would cut its
// sleep short (nanosleep does not resume), so it is not sent.
TEST(Preemption, AHolderAsleepInTheKernelIsNotInterrupted) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=20000000");
    Shared<Control> ctl;
    pid_t holder = test::fork_child([&] {
        if (nosv_init() != 0) return 11;
        nosv_task_t task;
        if (nosv_attach(&task, nullptr, "sleeper", 0) != 0) return 12;
        ctl->holder_spinning = true;
        timespec t{1, 0};
        const uint64_t start = test::now_ns();
        const int rc = nanosleep(&t, nullptr);
        ctl->holder_slept_ms = int64_t((test::now_ns() - start) / 1000000);
        nosv_detach(0);
        nosv_shutdown();
        return rc == 0 ? 0 : 14;
    });
    pid_t other = test::fork_child([&] { return waiter(*ctl); });
    EXPECT_EQ(test::wait_child(holder, 30s), 0) << "nanosleep was interrupted";
    EXPECT_EQ(test::wait_child(other, 30s), 0);
    EXPECT_GE(ctl->holder_slept_ms.load(), 1000);
}

namespace {
// This process's ProcSlot::preemptible, or -1 when it is not registered.
int own_preemptible_flag(const test::ScopedSegment& seg) {
    shm::SegmentMapping map = seg.map();
    for (const auto& p : map.get()->procs)
        if (p.state.load() == shm::ProcState::Alive && p.pid == ::getpid())
            return int(p.preemptible.load());
    return -1;
}
} // namespace

TEST(Preemption, AProcessIsPreemptibleByDefault) {
    test::ScopedSegment seg;
    pid_t child = test::fork_child([&] {
        if (nosv_init() != 0) return 11;
        const int flag = own_preemptible_flag(seg);
        return nosv_shutdown() == 0 && flag == 1 ? 0 : 12;
    });
    EXPECT_EQ(test::wait_child(child, 30s), 0);
}

// A program with a SIGURG handler of its own keeps it, and is then not
// preemptible (no other process signals it).
TEST(Preemption, AProgramsOwnSignalHandlerIsLeftAlone) {
    test::ScopedSegment seg;
    pid_t child = test::fork_child([&] {
        struct sigaction sa {};
        sa.sa_handler = [](int) {};
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGURG, &sa, nullptr) != 0) return 10;
        if (nosv_init() != 0) return 11;
        struct sigaction now {};
        sigaction(SIGURG, nullptr, &now);
        if (now.sa_handler != sa.sa_handler) return 12;
        const int flag = own_preemptible_flag(seg);
        return nosv_shutdown() == 0 && flag == 0 ? 0 : 13;
    });
    EXPECT_EQ(test::wait_child(child, 30s), 0);
}

// The first task spins on the only CPU; the second process's task preempts
// it, sets its flag and spins in turn. The first task, preempted, waits on
// its own thread, and its process's only worker is that thread: a grant
// back to it needs a pool thread its process has to make first. Without
// one, every turn's end passed the first process over, and the second
// task spun on the CPU for good (example.alpi-halo hung that way).
TEST(Preemption, TwoSpinningTasksThatWaitForEachOtherBothFinish) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=20000000");
    Shared<Exchange> ex;
    pid_t first = test::fork_child([&] { return run_one_task(*ex, first_task); });
    while (!ex->first_spinning.load())
        std::this_thread::sleep_for(1ms);
    pid_t second = test::fork_child([&] { return run_one_task(*ex, second_task); });
    EXPECT_EQ(test::wait_child(first, 60s), 0);
    EXPECT_EQ(test::wait_child(second, 60s), 0);
    EXPECT_TRUE(ex->from_first.load() && ex->from_second.load());
}
