// The preemption safety net: a process that holds a CPU and busy-waits in
// user code, never reaching a scheduling point, gives way to another process
// waiting for that CPU once it is past its quantum plus preempt_after_ns.
#include "support.hpp"

#include "shm/segment.hpp"

#include <nosv.h>
#include <nosv/hwinfo.h>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <string>

using namespace coexec;
using coexec::test::Shared;
using namespace std::chrono_literals;

namespace {

// The safety net's delay in the tests that turn it on.
constexpr uint64_t kPreemptAfterNs = 20'000'000;
const std::string kPreemptAfter = "scheduler.preempt_after_ns=" + std::to_string(kPreemptAfterNs);

struct Control {
    std::atomic<int> holder_cpu_before{-1}, holder_cpu_after{-1};
    std::atomic<bool> holder_spinning{false};
    std::atomic<bool> waiter_ran{false};
    std::atomic<bool> waiter_ran_during_spin{false};
};

// The process, other than the caller's, that waits for a CPU (it has ready
// work), or kNone.
int32_t waiting_process(const shm::Segment& s) {
    for (int32_t p = 0; p < shm::kMaxProcs; ++p)
        if (s.procs[p].state.load() == shm::ProcState::Alive && s.procs[p].pid != ::getpid() &&
            s.procs[p].ready_total.load() > 0)
            return p;
    return shm::kNone;
}

// When the holder of CPU 0 (the only one here) is past its turn plus
// kPreemptAfterNs: from then on a waiter's monitor signals it, where the
// safety net is on and the holder runs.
uint64_t overdue_from(const shm::Segment& s) {
    return s.cpus[0].turn_start_ns.load() + s.header.config.quantum_ns + kPreemptAfterNs;
}

// What the holder waits for while it spins (it stops anyway once the
// waiter ran).
enum class Until {
    WaiterRan, // the waiter got the CPU
    // The waiter's monitor looked at the holder (a beat) three times while
    // the waiter waited and the holder was overdue: with the safety net on,
    // the first look would have signalled it.
    ThreeLooks,
};

// On one CPU: attaches (taking the CPU), then busy-waits in user code until
// `until` or the waiter ran, for at most test::kPatience. Exit 0 when one
// of them came, 14 when neither did.
int spinning_holder(const test::ScopedSegment& seg, Control& ctl, Until until) {
    if (nosv_init() != 0) return 11;
    nosv_task_t task;
    if (nosv_attach(&task, nullptr, "holder", 0) != 0) return 12;
    shm::SegmentMapping map = seg.map();
    if (!map) return 13;
    const shm::Segment& s = *map.get();
    ctl.holder_cpu_before = sched_getcpu();
    ctl.holder_spinning = true;
    const uint64_t overdue = overdue_from(s);
    uint64_t waits_since = 0, last_look = 0;
    int looks = 0;
    auto came = [&] {
        if (ctl.waiter_ran.load()) return true; // whatever it waited for, it ends here
        if (until == Until::WaiterRan) return false;
        const int32_t w = waiting_process(s);
        if (w == shm::kNone) return false;
        if (waits_since == 0) waits_since = test::now_ns();
        const uint64_t look = s.procs[w].alive_ns.load();
        if (look > std::max(overdue, waits_since) && look != last_look) {
            last_look = look;
            ++looks;
        }
        return looks == 3;
    };
    const auto deadline = std::chrono::steady_clock::now() + test::kPatience;
    bool done = false;
    while (!(done = came()) && std::chrono::steady_clock::now() < deadline) {
    }
    ctl.waiter_ran_during_spin = ctl.waiter_ran.load();
    ctl.holder_cpu_after = sched_getcpu();
    map = {};
    nosv_detach(0);
    if (nosv_shutdown() != 0) return 15;
    return done ? 0 : 14;
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

// A holder spinning until `until` and a waiter, in two processes on one
// CPU; both must finish and succeed.
void run_holder_and_waiter(const test::ScopedSegment& seg, Control& ctl, Until until) {
    pid_t holder = test::fork_child([&] { return spinning_holder(seg, ctl, until); });
    pid_t other = test::fork_child([&] { return waiter(ctl); });
    EXPECT_EQ(test::wait_child(holder, 60s), 0) << "14: what the holder spun for never came";
    EXPECT_EQ(test::wait_child(other, 60s), 0);
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
    test::ScopedSegment seg("topology.binding=0," + kPreemptAfter);
    Shared<Control> ctl;
    run_holder_and_waiter(seg, *ctl, Until::WaiterRan);
    EXPECT_TRUE(ctl->waiter_ran_during_spin) << "the spinning holder never gave way";
    // It got the same CPU back (the only one here, and the one it was bound to).
    EXPECT_EQ(ctl->holder_cpu_after.load(), ctl->holder_cpu_before.load());
}

// The holder spins until the waiter's monitor has looked at it three times
// while it was overdue (as the safety net on would count it): counted in
// looks, not in time, so a loaded machine only makes the test take longer.
TEST(Preemption, OffMeansAHolderKeepsItsCpuUntilASchedulingPoint) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=0");
    Shared<Control> ctl;
    run_holder_and_waiter(seg, *ctl, Until::ThreeLooks);
    EXPECT_FALSE(ctl->waiter_ran_during_spin);
    EXPECT_TRUE(ctl->waiter_ran) << "the waiter runs once the holder detaches";
}

// A holder asleep in the kernel is not spinning: the signal would cut its
// sleep short (nanosleep does not resume), so it is not sent. The holder
// starts its sleep within its turn (a quantum of 500 ms) once the waiter
// waits, and sleeps past the turn until the waiter's monitor has looked at
// it overdue for another 500 ms: about 25 looks, each of which would signal
// a holder that runs.
TEST(Preemption, AHolderAsleepInTheKernelIsNotInterrupted) {
    constexpr uint64_t kQuantumNs = 500'000'000, kOverdueSleepNs = 500'000'000;
    // Exit codes of the holder; kLateWaiter: the waiter came too late, when
    // the holder was overdue already (its sleep could not start in time),
    // so the case is run again.
    constexpr int kInterrupted = 14, kLateWaiter = 20, kNeverLooked = 17;
    int holder_rc = kLateWaiter;
    for (int attempt = 0; attempt < 3 && holder_rc == kLateWaiter; ++attempt) {
        test::ScopedSegment seg("topology.binding=0,scheduler.quantum_ns=" +
                                std::to_string(kQuantumNs) + "," + kPreemptAfter);
        Shared<Control> ctl;
        pid_t holder = test::fork_child([&] {
            if (nosv_init() != 0) return 11;
            nosv_task_t task;
            if (nosv_attach(&task, nullptr, "sleeper", 0) != 0) return 12;
            shm::SegmentMapping map = seg.map();
            if (!map) return 13;
            const shm::Segment& s = *map.get();
            ctl->holder_spinning = true;
            const uint64_t overdue = overdue_from(s);
            // Short sleeps until the waiter waits: nobody signals a holder
            // that nobody waits for, nor one within its turn.
            int32_t w = shm::kNone;
            for (timespec tick{0, 1'000'000};
                 (w = waiting_process(s)) == shm::kNone && test::now_ns() < overdue;)
                if (nanosleep(&tick, nullptr) != 0)
                    return test::now_ns() < overdue ? kInterrupted : kLateWaiter;
            const uint64_t start = test::now_ns();
            const bool late = w == shm::kNone || start + 1'000'000 >= overdue;
            int rc = 0;
            bool looked = false;
            if (!late) {
                const uint64_t ns = overdue + kOverdueSleepNs - start;
                timespec t{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
                rc = nanosleep(&t, nullptr);
                // Its monitor's beats only grow, and nothing can stop it
                // while it waits: a beat past `overdue` means it looked
                // during the sleep (or just after it, when the holder,
                // running again, is rightly signalled at once).
                looked = s.procs[w].alive_ns.load() > overdue;
            }
            map = {};
            nosv_detach(0);
            nosv_shutdown();
            if (late) return kLateWaiter;
            if (rc != 0) return kInterrupted;
            return looked ? 0 : kNeverLooked;
        });
        pid_t other = test::fork_child([&] { return waiter(*ctl); });
        holder_rc = test::wait_child(holder, 60s);
        EXPECT_EQ(test::wait_child(other, 60s), 0);
    }
    EXPECT_EQ(holder_rc, 0) << kInterrupted << ": nanosleep was interrupted; " << kNeverLooked
                            << ": the waiter's monitor never looked at the overdue holder; "
                            << kLateWaiter << ": the waiter never waited within the holder's turn";
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
