// A member that replaces its image (execve) while it holds CPUs: the pid
// and start time stay, the image that joined is gone. What it held goes
// back to the instance whether the new image joins again (a shell script
// that execs the next one, `env`, `pyenv exec`) or never does.
#include "support.hpp"

#include <nosv.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace coexec;
using namespace std::chrono_literals;

namespace {

pid_t start_probe(const std::vector<std::string>& args) {
    return test::fork_child([&] {
        std::vector<char*> argv{const_cast<char*>(EXEC_PROBE)};
        for (const auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(EXEC_PROBE, argv.data());
        return 13;
    });
}

std::string comm_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
}

// CPUs that are Running for a process whose pid is `pid`.
int cpus_held_by(const shm::Segment& s, pid_t pid) {
    int held = 0;
    for (int c = 0; c < s.header.cpu_count; ++c) {
        const shm::CpuSlot& cpu = s.cpus[c];
        const int32_t p = cpu.owner_proc.load();
        if (cpu.state.load() == shm::CpuState::Running && p >= 0 && s.procs[p].pid == pid) ++held;
    }
    return held;
}

} // namespace

// Every image of a chain longer than twice the CPUs joins and attaches its
// main thread, then hands on to the next without leaving: an image waits
// for a CPU only while one that still runs holds it.
TEST(Exec, EveryImageOfAChainGetsACpu) {
    test::ScopedSegment seg;
    // This process stays a member, so that the segment stays to be read.
    ASSERT_EQ(nosv_init(), 0);
    {
        auto map = seg.map();
        const int levels = 2 * map->header.cpu_count + 2;
        const pid_t chain = start_probe({std::to_string(levels)});
        EXPECT_EQ(test::wait_child(chain, 60s), 0)
            << "an image waited for a CPU that an image before it held";
        EXPECT_EQ(map->header.alive_count, 1) << "only this process is still a member";
        EXPECT_EQ(cpus_held_by(*map.get(), chain), 0);
    }
    EXPECT_EQ(nosv_shutdown(), 0);
}

// Members whose last image never joins (a program run without coexec)
// hold every CPU on paper; this process's threads, which then wait for
// every CPU at once, get them all while those programs still run.
TEST(Exec, AnImageThatNeverJoinsGivesBackWhatItsPredecessorHeld) {
    // Without the preemption safety net: the CPUs come back only if the
    // members that hold them are found gone.
    test::ScopedSegment seg("scheduler.preempt_after_ns=0");
    ASSERT_EQ(nosv_init(), 0);
    auto map = seg.map();
    const int cpus = map->header.cpu_count;
    std::vector<pid_t> sleepers;
    for (int i = 0; i < cpus; ++i)
        sleepers.push_back(start_probe({"0", "/bin/sleep", "600"}));
    for (const pid_t p : sleepers)
        ASSERT_TRUE(test::wait_until([&] { return comm_of(p) == "sleep"; }))
            << "probe " << p << " never ran sleep: " << test::wait_child(p, 1s);
    // Each attached before it ran sleep: their members held every CPU.
    std::atomic<int> attached{0};
    std::atomic<bool> release{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < cpus; ++i)
        threads.emplace_back([&] {
            nosv_task_t t = nullptr;
            if (nosv_attach(&t, nullptr, "waiter", NOSV_ATTACH_NONE) != 0) return;
            attached.fetch_add(1);
            // Holds its CPU until every thread holds one.
            while (!release.load())
                std::this_thread::sleep_for(200us);
            nosv_detach(NOSV_DETACH_NONE);
        });
    EXPECT_TRUE(test::wait_until([&] { return attached.load() == cpus; }))
        << attached.load() << " of " << cpus << " threads got a CPU while the programs run";
    for (const pid_t p : sleepers)
        EXPECT_EQ(comm_of(p), "sleep") << "the program ended: the test proves nothing";
    for (const pid_t p : sleepers)
        EXPECT_EQ(cpus_held_by(*map.get(), p), 0);
    release = true;
    for (const pid_t p : sleepers)
        ::kill(p, SIGKILL);
    for (auto& t : threads)
        t.join();
    for (const pid_t p : sleepers)
        EXPECT_EQ(test::wait_child(p, 10s), 128 + SIGKILL);
    EXPECT_EQ(nosv_shutdown(), 0);
}
