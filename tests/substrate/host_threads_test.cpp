// Program threads that coexec hosts (COEXEC_HOST_THREADS=main, or all): the
// main thread of a program with libcoexec-host.so preloaded, and with all
// every thread it starts, holds a CPU of the segment, and gives it away
// wherever it blocks in the C library.
//
// Each case runs host-threads-probe (host_threads_probe.cpp) on a one-CPU
// segment with the preemption safety net off. Once the probe's main thread
// holds the CPU, another process attaches (it needs that CPU) and then lets
// the probe through; the probe blocks in the call under test meanwhile. The
// other process can attach only if the call gave the CPU away: if it did
// not, neither process ever finishes and the case fails at its deadline.
#include "support.hpp"

#include "../support/spawn.hpp"

#include "shm/segment.hpp"

#include <nosv.h>

#include <fcntl.h>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

using namespace coexec;
using namespace std::chrono_literals;

namespace {

const std::string kProbe = HOST_THREADS_PROBE;
const std::string kPreload = HOST_THREADS_PRELOAD; // libcoexec, libcoexec-host.so

// The pid of the process whose thread holds the segment's CPU 0, or 0.
pid_t holder_of_cpu0(const shm::Segment& s) {
    const int32_t p = s.cpus[0].owner_proc.load();
    return p == shm::kNone ? 0 : s.procs[p].pid;
}

// Starts the probe for `op` with its main thread hosted, on the test's
// segment. `go` is the pipe's read end, which the probe inherits. With
// `started`, every thread is hosted and one the main thread starts calls
// `op`.
pid_t start_probe(const std::string& op, int go, const std::string& host = "main",
                  bool started = false) {
    std::vector<std::string> argv{kProbe, op, std::to_string(go)};
    if (started) argv.push_back("started");
    return test_support::spawn(
        argv, {{"COEXEC_HOST_THREADS", started ? "all" : host}, {"LD_PRELOAD", kPreload}});
}

// The call, and whether a thread the main thread started makes it
// (COEXEC_HOST_THREADS=all) rather than the main thread itself.
class HostedThread : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

// Once the probe holds the segment's one CPU, another process attaches
// (which needs that CPU) and then lets the probe through with a byte on
// `go`'s write end. Both finish only if the probe's call gave the CPU away.
void expect_cpu_given_away(const test::ScopedSegment& seg, pid_t probe, int go_write) {
    // The probe created the segment, and its thread holds the one CPU.
    shm::SegmentMapping map;
    ASSERT_TRUE(test::wait_until([&] {
        if (!map) {
            shm::SegmentError e;
            map = shm::SegmentMapping::open(seg.options(), e);
        }
        return map && holder_of_cpu0(*map.get()) == probe;
    })) << "the probe's thread never held the CPU";
    // Attaching needs the CPU, which the probe holds until it blocks.
    const pid_t other = test::fork_child([&] {
        nosv_task_t task;
        if (nosv_init() != 0) return 11;
        if (nosv_attach(&task, nullptr, "other", 0) != 0) return 12;
        const char byte = 1;
        const bool sent = ::write(go_write, &byte, 1) == 1;
        nosv_detach(NOSV_DETACH_NONE);
        if (nosv_shutdown() != 0) return 13;
        return sent ? 0 : 14;
    });
    ::close(go_write);
    const int other_status = test::wait_child(other, test::kPatience);
    EXPECT_EQ(other_status, 0) << "-1: the other process never got the CPU";
    // Once the other process gave up, the probe waits for good.
    if (other_status != 0) ::kill(probe, SIGKILL);
    EXPECT_EQ(test::wait_child(probe, test::kPatience), 0)
        << "3: not hosted, 4: the call failed, -1: it never returned";
}

TEST_P(HostedThread, BlockingCallGivesTheCpuAway) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=0");
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    const auto [op, started] = GetParam();
    const pid_t probe = start_probe(op, go[0], "main", started);
    ::close(go[0]);
    expect_cpu_given_away(seg, probe, go[1]);
}

INSTANTIATE_TEST_SUITE_P(
    Calls, HostedThread,
    ::testing::Combine(::testing::Values("pthread_cond_wait", "pthread_cond_timedwait",
                                         "pthread_mutex_lock", "pthread_rwlock_rdlock", "sem_wait",
                                         "pthread_join", "pthread_barrier_wait", "nanosleep",
                                         "clock_nanosleep", "usleep", "poll", "select",
                                         "epoll_wait", "read", "recv", "accept", "waitpid"),
                       ::testing::Bool()),
    [](const auto& info) {
        return std::string(std::get<0>(info.param)) +
               (std::get<1>(info.param) ? "_OnAStartedThread" : "_OnTheMainThread");
    });

// A thread asleep where no wrapper sees it (a raw futex system call) holds
// its CPU until its process's monitor finds it asleep there for a whole
// period and has it lend the CPU from its signal handler (the safety net is
// on here, at its default).
class HostedThreadAsleep : public ::testing::TestWithParam<bool> {};

TEST_P(HostedThreadAsleep, RawSystemCallLendsTheCpuAfterAPeriod) {
    test::ScopedSegment seg("topology.binding=0");
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    const pid_t probe = start_probe("raw_futex", go[0], "main", GetParam());
    ::close(go[0]);
    expect_cpu_given_away(seg, probe, go[1]);
}

INSTANTIATE_TEST_SUITE_P(MainOrStarted, HostedThreadAsleep, ::testing::Bool(),
                         [](const auto& info) {
                             return std::string(info.param ? "OnAStartedThread"
                                                           : "OnTheMainThread");
                         });

// Runs the probe whose hosted main thread spins in user code for a task of
// its own process, on one CPU, with scheduler.preempt_after_ns = `after`;
// returns wait_child()'s status after `patience` at most.
int spin_for_own_task(const std::string& after, std::chrono::milliseconds patience) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=" + after);
    return test::wait_child(start_probe("spin_for_own_task", -1), patience);
}

// The main thread gives way to the task once it has held the CPU for a
// quantum plus scheduler.preempt_after_ns (the safety net, here 20 ms).
TEST(HostThreads, SpinningMainThreadGivesWayToItsOwnWork) {
    EXPECT_EQ(spin_for_own_task("20000000", test::kPatience), 0)
        << "-1: the task never ran, 4: the nOS-V calls failed";
}

// With the safety net off, nothing takes the CPU from the spinning thread:
// what the test above checks is the safety net's doing.
TEST(HostThreads, SpinningMainThreadKeepsTheCpuWithoutTheSafetyNet) {
    EXPECT_EQ(spin_for_own_task("0", std::chrono::seconds(2)), -1) << "it did not spin";
}

// A hosted thread's sched_yield goes on to the kernel's only while a thread
// of the program may share its CPU without holding it: under main, the
// threads the program starts, which run unhosted; under all, a hosted
// thread whose wait in the C library ended while its CPU was away (the
// probe's main thread waits in pthread_join while the thread it started
// yields). Under all with no thread away, the kernel's yield would only hand
// programs outside coexec a time slice per spin of a thread that waits for
// another of its own.
TEST(HostThreads, KernelYieldOnlyWhileAThreadMayShareTheCpuUnheld) {
    test::ScopedSegment seg("topology.binding=0");
    const std::string preload = kPreload + ":" + KERNEL_YIELD_COUNTER;
    auto run = [&](const char* op, const char* mode, bool started) {
        std::vector<std::string> argv{kProbe, op, "-1"};
        if (started) argv.push_back("started");
        return test::wait_child(
            test_support::spawn(argv, {{"COEXEC_HOST_THREADS", mode}, {"LD_PRELOAD", preload}}),
            test::kPatience);
    };
    EXPECT_EQ(run("yields_reach_kernel", "main", false), 0) << "main: 4: a yield stayed in coexec";
    EXPECT_EQ(run("yields_stay_in_coexec", "all", false), 0)
        << "all, no thread away: 4: a yield reached the kernel";
    // Under load a kernel yield may run another program long enough to
    // back off (see below): at least the first one goes to the kernel.
    EXPECT_EQ(run("yields_may_reach_kernel", "all", true), 0)
        << "all, the main thread away: 4: no yield reached the kernel";
    // The counter sees what it should: the opposite expectations fail.
    EXPECT_EQ(run("yields_stay_in_coexec", "main", false), 4);
    EXPECT_EQ(run("yields_reach_kernel", "all", false), 4);
    EXPECT_EQ(run("yields_stay_in_coexec", "all", true), 4);
}

// A kernel yield that runs a program outside coexec for a whole time slice
// (here a process that spins on the segment's one CPU) makes the thread skip
// the kernel's yield for a while: without that, two OpenBLAS threads beside
// CPU hogs waited for each other through a hog's slice per spin (40 LU
// solves in a thread while the main thread joined it: 4.5 s, against
// 0.34-0.54 s with the back-off; 2 CPUs). Of the probe's 100 yields the
// first reaches the kernel and runs the spinner; the next 99 come within
// the quiet time after it.
TEST(HostThreads, KernelYieldsBackOffBesideAProgramOutsideCoexec) {
    const test::Spinner spinner(0);
    test::ScopedSegment seg("topology.binding=0");
    const int rc = test::wait_child(
        test_support::spawn({kProbe, "yields_back_off", "-1", "started"},
                            {{"COEXEC_HOST_THREADS", "all"},
                             {"LD_PRELOAD", kPreload + ":" + KERNEL_YIELD_COUNTER}}),
        test::kPatience);
    EXPECT_EQ(rc, 0) << "4: more than 10 of 100 yields went to the kernel beside the spinner";
}

// A hosted thread that has spun on sched_yield for a while naps while work
// waits for its CPU, instead of queueing for the CPU at every yield: beside
// a worker of its process that yields between 50 us pieces of work on one
// CPU, it takes a turn at far fewer than a quarter of the worker's yields
// once it has spun 50 ms (about one per millisecond; one per yield without
// naps, and so before SpinStreak).
TEST(HostThreads, LongSpinOnSchedYieldNapsWhileWorkWaits) {
    test::ScopedSegment seg("topology.binding=0");
    const int rc = test::wait_child(
        test_support::spawn({kProbe, "idle_spin_naps", "-1", "started"},
                            {{"COEXEC_HOST_THREADS", "all"}, {"LD_PRELOAD", kPreload}}),
        test::kPatience);
    EXPECT_EQ(rc, 0) << "4: the spinner took a turn at a quarter of the worker's yields or more";
}

// Without COEXEC_HOST_THREADS (or with none), nothing is hosted: the probe
// says so (exit 3) without touching the segment.
TEST(HostThreads, OffUnlessAsked) {
    test::ScopedSegment seg("topology.binding=0");
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    for (const char* host : {"", "none"}) {
        const pid_t probe = start_probe("read", go[0], host);
        EXPECT_EQ(test::wait_child(probe, 60s), 3) << "COEXEC_HOST_THREADS=" << host;
    }
    shm::SegmentError e;
    EXPECT_FALSE(shm::SegmentMapping::open(seg.options(), e)) << "a segment was created";
    ::close(go[0]);
    ::close(go[1]);
}

// A value that is not none, main or all: one line on stderr, nothing hosted.
TEST(HostThreads, UnknownValueIsReported) {
    test::ScopedSegment seg("topology.binding=0");
    int go[2], err[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(err), 0);
    const pid_t probe = test_support::spawn(
        {kProbe, "read", std::to_string(go[0])},
        {{"COEXEC_HOST_THREADS", "every"}, {"LD_PRELOAD", kPreload}}, -1, -1, err[1]);
    ::close(err[1]);
    EXPECT_EQ(test::wait_child(probe, 60s), 3);
    std::string text;
    char buf[256];
    for (ssize_t n; (n = ::read(err[0], buf, sizeof buf)) > 0;)
        text.append(buf, size_t(n));
    EXPECT_NE(text.find("COEXEC_HOST_THREADS=every is not one of none, main and all"),
              std::string::npos)
        << text;
    for (int fd : {go[0], go[1], err[0]})
        ::close(fd);
}

} // namespace
