// Several processes × threads doing attach/submit/pause/yield/waitfor on one
// segment, while the parent samples the segment: invariant 1 of docs/design.md.
#include "support.hpp"
#include "workload.hpp"

#include "scheduler/shared_scheduler.hpp"

#include <nosv.h>

#include <sys/wait.h>
#include <thread>
#include <vector>

using namespace coexec;
using coexec::test::Shared;
using namespace std::chrono_literals;

namespace {

Shared<test::Occupancy>* g_occ;

// Work the churning children do at least, whatever the machine's load: the
// occupancy check means something only over enough samples, and a loaded
// machine gives the children less CPU in the same wall time.
constexpr long kMinSamples = 1000;
// Then they stop, however few samples they took (the test then fails).
constexpr auto kMaxRun = std::chrono::seconds(30);

bool churning(std::chrono::steady_clock::time_point until) {
    const auto now = std::chrono::steady_clock::now();
    return now < until || ((*g_occ)->samples.load() < kMinSamples && now < until + kMaxRun);
}

struct Countdown {
    std::atomic<int> left;
    nosv_task_t waiter;
};

void task_run(nosv_task_t) {
    (*g_occ)->compute(50us);
}
void task_done(nosv_task_t t) {
    auto* cd = *static_cast<Countdown**>(nosv_get_task_metadata(t));
    if (cd->left.fetch_sub(1) == 1) nosv_submit(cd->waiter, 0);
}

// One attached thread cycling through every scheduling point.
void churn(nosv_task_type_t type, std::chrono::steady_clock::time_point until) {
    nosv_task_t self;
    if (nosv_attach(&self, nullptr, "churn", 0) != 0) std::_Exit(10);
    std::vector<nosv_task_t> tasks(3);
    for (auto& t : tasks)
        nosv_create(&t, type, sizeof(Countdown*), 0);
    Countdown cd;
    for (int i = 0; churning(until); ++i) {
        (*g_occ)->compute(30us);
        switch (i % 4) {
        case 0:
            nosv_yield(0);
            break;
        case 1: {
            cd.left = int(tasks.size());
            cd.waiter = self;
            for (auto t : tasks) {
                *static_cast<Countdown**>(nosv_get_task_metadata(t)) = &cd;
                nosv_submit(t, 0);
            }
            while (cd.left.load() > 0)
                nosv_pause(0);
            break;
        }
        case 2:
            nosv_waitfor(100'000, nullptr);
            break;
        case 3:
            nosv_schedpoint(0);
            break;
        }
    }
    for (auto t : tasks)
        while (nosv_destroy(t, 0) != 0)
            nosv_yield(0);
    nosv_detach(0);
}

int child_main(std::chrono::milliseconds run_for) {
    if (nosv_init() != 0) return 11;
    nosv_task_type_t type;
    nosv_type_init(&type, task_run, nullptr, task_done, "mp", nullptr, nullptr, 0);
    auto until = std::chrono::steady_clock::now() + run_for;
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i)
        threads.emplace_back(churn, type, until);
    for (auto& t : threads)
        t.join();
    nosv_type_destroy(type, 0);
    return nosv_shutdown() == 0 ? 0 : 12;
}

// Threads in pairs passing a baton: each resumes its partner and pauses,
// and yields now and then; beside them a thread outside coexec competes for
// the CPUs, so the kernel delays coexec threads at any point of a hand-off.
int pingpong_main(std::chrono::milliseconds run_for) {
    if (nosv_init() != 0) return 11;
    const auto until = std::chrono::steady_clock::now() + run_for;
    std::atomic<bool> done{false};
    std::thread hog([&] {
        while (!done.load(std::memory_order_relaxed))
            test::Occupancy::spin(100us);
    });
    struct Pair {
        nosv_task_t task[2] = {};
        std::atomic<int> attached{0};
        std::atomic<bool> more{true}; // written by the leader before it hands over
    };
    std::vector<Pair> pairs(2);
    std::vector<std::thread> threads;
    for (auto& pair : pairs)
        for (int side = 0; side < 2; ++side)
            threads.emplace_back([&pair, side, until] {
                if (nosv_attach(&pair.task[side], nullptr, "pingpong", 0) != 0) std::_Exit(10);
                pair.attached.fetch_add(1);
                // A submit that reaches a yielding task is kept for its next pause.
                while (pair.attached.load() < 2)
                    nosv_yield(0);
                nosv_task_t partner = pair.task[side ^ 1];
                for (int r = 0;; ++r) {
                    if (side == 1) nosv_pause(0);
                    if (side == 0) pair.more = std::chrono::steady_clock::now() < until;
                    const bool more = pair.more.load();
                    if (r % 4 == 0) nosv_yield(0);
                    if (more || side == 0) nosv_submit(partner, 0);
                    if (!more) break;
                    if (side == 0) nosv_pause(0);
                }
                nosv_detach(0);
            });
    for (auto& t : threads)
        t.join();
    done = true;
    hog.join();
    return nosv_shutdown() == 0 ? 0 : 12;
}

// Samples lock-free, as coexec top does: one pass is taken only when a second
// pass reads the same owners and states.
struct CpuRecord {
    int32_t thread[shm::kMaxCpus];
    shm::CpuState state[shm::kMaxCpus];
    bool operator==(const CpuRecord&) const = default;
};

CpuRecord read_cpus(const shm::Segment& s) {
    CpuRecord r{};
    for (int c = 0; c < s.header.cpu_count; ++c) {
        r.thread[c] = s.cpus[c].owner_thread.load(std::memory_order_acquire);
        r.state[c] = s.cpus[c].state.load(std::memory_order_acquire);
    }
    return r;
}

// Maps the segment once the forked children have created it; an empty
// mapping if they did not within test::kPatience.
shm::SegmentMapping map_when_created(const test::ScopedSegment& seg) {
    shm::SegmentMapping map;
    test::wait_until([&] {
        shm::SegmentError e;
        map = shm::SegmentMapping::open(seg.options(), e);
        return bool(map);
    });
    return map;
}

// Whether every child in `kids` has exited (left for wait_child() to reap).
bool all_exited(const std::vector<pid_t>& kids) {
    for (pid_t k : kids) {
        siginfo_t info{};
        if (::waitid(P_PID, id_t(k), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != k)
            return false;
    }
    return true;
}

} // namespace

// A thread holds at most one CPU: its task is made ready again (by a
// resume, or by its own yield) only after the thread left its CPU, so no
// other holder can hand it a second one meanwhile.
TEST(MultiProcess, NoThreadIsRecordedOnTwoCpus) {
    test::ScopedSegment seg;
    std::vector<pid_t> kids;
    for (int i = 0; i < 2; ++i)
        kids.push_back(test::fork_child([] { return pingpong_main(1500ms); }));
    shm::SegmentMapping map = map_when_created(seg);
    ASSERT_TRUE(map);
    const shm::Segment& s = *map.get();
    long agreed = 0, doubled = 0;
    // Sampled for as long as the children run, and at least 1000 times
    // (children that hang are killed below).
    const auto give_up = std::chrono::steady_clock::now() + kMaxRun;
    while ((!all_exited(kids) || agreed <= 1000) && std::chrono::steady_clock::now() < give_up) {
        CpuRecord r = read_cpus(s);
        if (!(read_cpus(s) == r)) continue;
        ++agreed;
        for (int a = 0; a < s.header.cpu_count; ++a)
            for (int b = a + 1; b < s.header.cpu_count; ++b)
                if (r.state[a] == shm::CpuState::Running && r.state[b] == shm::CpuState::Running &&
                    r.thread[a] != shm::kNone && r.thread[a] == r.thread[b])
                    ++doubled;
    }
    for (pid_t k : kids)
        EXPECT_EQ(test::wait_child(k, 120s), 0);
    EXPECT_GT(agreed, 1000);
    EXPECT_EQ(doubled, 0) << "of " << agreed << " samples showed one thread holding two CPUs";
}

TEST(MultiProcess, AtMostOneRunningThreadPerCpu) {
    test::ScopedSegment seg;
    Shared<test::Occupancy> occ;
    g_occ = &occ;
    constexpr int kProcs = 3;
    std::vector<pid_t> kids;
    for (int i = 0; i < kProcs; ++i)
        kids.push_back(test::fork_child([] { return child_main(1500ms); }));

    // Sample the segment (mapped here at its own address) while they run.
    shm::SegmentMapping map = map_when_created(seg);
    ASSERT_TRUE(map);
    scheduler::SharedScheduler sched(*map.get());
    long sampled = 0, running_seen = 0;
    // Sampled for as long as the children run, and at least 100 times
    // (children that hang are killed below).
    const auto give_up = std::chrono::steady_clock::now() + 2 * kMaxRun;
    while ((!all_exited(kids) || sampled <= 100) && std::chrono::steady_clock::now() < give_up) {
        {
            // The lock only while sampling: held through the sleep below, it
            // left the children the gaps between two samples to take it in.
            scheduler::WakeList w;
            scheduler::SchedulerLock lock(sched, w);
            const shm::Segment& s = *map.get();
            for (int c = 0; c < s.header.cpu_count; ++c) {
                const auto& cpu = s.cpus[c];
                if (cpu.state.load() != shm::CpuState::Running) continue;
                ++running_seen;
                int32_t p = cpu.owner_proc.load(), t = cpu.owner_thread.load();
                ASSERT_GE(p, 0);
                ASSERT_GE(t, 0);
                EXPECT_EQ(s.procs[p].state.load(), shm::ProcState::Alive);
                EXPECT_EQ(s.threads[t].proc, p)
                    << "CPU " << c << " owned by a thread of another process";
            }
        }
        ++sampled;
        std::this_thread::sleep_for(1ms);
    }
    for (pid_t k : kids)
        EXPECT_EQ(test::wait_child(k, 60s), 0);
    EXPECT_GT(sampled, 100);
    EXPECT_GT(running_seen, 0);
    EXPECT_GE(occ->samples.load(), kMinSamples);
    EXPECT_EQ(occ->violations.load(), 0) << "two coexec threads ran on one CPU at once";
    EXPECT_EQ(occ->wrong_cpu.load(), 0) << "a thread ran off its granted CPU";
    // Everyone left cleanly: no process, no held CPU.
    EXPECT_EQ(map->header.alive_count, 0);
    for (int c = 0; c < map->header.cpu_count; ++c)
        EXPECT_NE(map->cpus[c].state.load(), shm::CpuState::Running);
}

// A thread that spins on nosv_yield() while another process waits for its
// CPU keeps the CPU until its turn is over, and asks the segment lock only
// then: within the turn, its yields read the scheduling state without the
// lock (TaskOps::yield()), so a spinning yielder does not load the lock
// that every process of the node shares.
TEST(MultiProcess, YieldsWithinTheTurnTakeNoSegmentLock) {
    test::ScopedSegment seg("topology.binding=0,scheduler.quantum_ns=30000000000");
    struct Flags {
        std::atomic<bool> waiting, done;
    };
    Shared<Flags> flags;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "yielder", NOSV_ATTACH_NONE), NOSV_SUCCESS);
    // The other process waits for the one CPU, which this thread holds.
    pid_t waiter = test::fork_child([&] {
        nosv_task_t t;
        if (nosv_init() != 0) return 11;
        flags->waiting = true;
        if (nosv_attach(&t, nullptr, "waiter", NOSV_ATTACH_NONE) != 0) return 12;
        flags->done = true;
        nosv_detach(NOSV_DETACH_NONE);
        return nosv_shutdown() == 0 ? 0 : 13;
    });
    auto map = seg.map();
    ASSERT_TRUE(map);
    const shm::Segment& s = *map.get();
    // Waiting: its attach counts the CPU as wanted (a ready item).
    ASSERT_TRUE(test::wait_until([&] {
        return flags->waiting.load() && s.header.alive_count == 2 &&
               s.procs[s.header.alive[1]].ready_total.load() > 0;
    }));
    const uint64_t before = s.header.lock_acquisitions.load();
    for (int i = 0; i < 10000; ++i)
        ASSERT_EQ(nosv_yield(NOSV_YIELD_NONE), NOSV_SUCCESS);
    // The 30 s quantum is not over: the waiter still waits, and no yield
    // took the lock.
    EXPECT_FALSE(flags->done.load());
    EXPECT_EQ(s.header.lock_acquisitions.load(), before);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    EXPECT_EQ(test::wait_child(waiter), 0);
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
}
