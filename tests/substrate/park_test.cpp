// A paused task's CPU, parked (CpuHandover::park(), CpuTable::park()): a
// thread whose task pauses while no work of any process waits for its CPU
// keeps the CPU and sleeps, and the submit that resumes the task wakes it
// there, neither step taking the segment lock; work that needs the CPU
// meanwhile takes it at once, and the parker then waits for a CPU as usual.
#include "support.hpp"

#include "scheduler/cpu_bits.hpp"

#include <nosv.h>
#include <nosv/affinity.h>

#include <atomic>
#include <sched.h>
#include <string>
#include <thread>
#include <vector>

using namespace coexec;
using coexec::test::Shared;

namespace {

// The settings of an instance that manages the first `n` allowed CPUs.
std::string binding(const std::vector<int>& cpus, size_t n) {
    std::string list;
    for (size_t i = 0; i < n; ++i)
        list += (i ? "," : "") + std::to_string(cpus[i]);
    return "topology.binding=" + list;
}

// nosv_init() on a private segment, mapped for the test to read.
class Joined {
  public:
    explicit Joined(const std::string& extra) : seg_(extra) {
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
        map_ = seg_.map();
    }
    ~Joined() { EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS); }
    Joined(const Joined&) = delete;
    Joined& operator=(const Joined&) = delete;
    const shm::Segment& segment() const { return *map_.get(); }
    bool mapped() const { return bool(map_); }

  private:
    test::ScopedSegment seg_;
    shm::SegmentMapping map_;
};

// No CPU is marked parked, and the count agrees.
void expect_nothing_parked(const shm::Segment& s) {
    EXPECT_EQ(s.header.parked_cpus.load(), 0);
    EXPECT_EQ(scheduler::find_in(s.header.parked, s.header.cpu_count, [](int32_t) { return true; }),
              shm::kNone);
}

// A team of attached threads meeting at a barrier whose waiters pause and
// whose last arrival submits them, as an OpenMP team's threads do when they
// sleep at barriers.
class Team {
  public:
    explicit Team(int n) : tasks_(size_t(n)) {}
    int size() const { return int(tasks_.size()); }

    // Attaches the calling thread as member `me` and waits for the others.
    void join(int me) {
        nosv_task_t self = nullptr;
        ASSERT_EQ(nosv_attach(&self, nullptr, "team", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        tasks_[size_t(me)].store(self);
        attached_.fetch_add(1);
        while (attached_.load() < size())
            std::this_thread::yield();
    }
    void meet(int me) {
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 < size()) {
            // One submit per round: the pause returns once the round is over.
            EXPECT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
            return;
        }
        arrived_.store(0, std::memory_order_relaxed);
        for (int i = 0; i < size(); ++i)
            if (i != me) {
                EXPECT_EQ(nosv_submit(tasks_[size_t(i)].load(), NOSV_SUBMIT_NONE), NOSV_SUCCESS);
            }
    }

  private:
    std::vector<std::atomic<nosv_task_t>> tasks_;
    std::atomic<int> attached_{0};
    std::atomic<int> arrived_{0};
};

// An attached thread whose task pauses until resume(): it parks the CPU it
// was granted, which `cpu()` names.
class PausedThread {
  public:
    explicit PausedThread(const shm::Segment& s)
        : thread_([this] {
              nosv_task_t self = nullptr;
              ASSERT_EQ(nosv_attach(&self, nullptr, "parker", NOSV_ATTACH_NONE), NOSV_SUCCESS);
              cpu_.store(nosv_get_current_system_cpu());
              task_.store(self);
              EXPECT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
              resumed_.store(true);
              EXPECT_NE(nosv_get_current_system_cpu(), -1) << "resumed without a CPU";
              EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
          }) {
        parked_ = test::wait_until([&] { return s.header.parked_cpus.load() == 1; });
    }
    // A test that stopped before resume() still ends the thread.
    ~PausedThread() {
        if (!thread_.joinable()) return;
        if (test::wait_until([&] { return task_.load() != nullptr; }))
            nosv_submit(task_.load(), NOSV_SUBMIT_NONE);
        thread_.join();
    }
    PausedThread(const PausedThread&) = delete;
    PausedThread& operator=(const PausedThread&) = delete;

    // Whether the thread parked its CPU (within the tests' patience).
    bool parked() const { return parked_; }
    int cpu() const { return cpu_.load(); }
    bool resumed() const { return resumed_.load(); }
    // Submits the paused task and waits for the thread to end.
    void resume() {
        ASSERT_EQ(nosv_submit(task_.load(), NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        thread_.join();
        EXPECT_TRUE(resumed_.load());
    }

  private:
    std::atomic<nosv_task_t> task_{nullptr};
    std::atomic<int> cpu_{-1};
    std::atomic<bool> resumed_{false};
    bool parked_ = false;
    std::thread thread_; // last: it starts once the fields above exist
};

// Memory shared with the child of the cross-process test.
struct Flags {
    std::atomic<int> attached{0};
};

std::atomic<int> g_ran_on{-1};
std::atomic<bool> g_completed{false};

void record_cpu(nosv_task_t) {
    g_ran_on.store(nosv_get_current_system_cpu());
}
void mark_completed(nosv_task_t) {
    g_completed.store(true);
}

} // namespace

// The case the segment lock could not carry on a big node: every thread of a
// team sleeps at every barrier (docs/design.md, "The segment lock"). With no
// other work, each keeps its CPU parked and is woken there: the barriers
// take the lock not once.
TEST(Park, ATeamWhoseThreadsSleepAtEveryBarrierTakesNoLock) {
    const std::vector<int> cpus = test::allowed_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, one per thread of the team";
    Joined in(binding(cpus, 2));
    ASSERT_TRUE(in.mapped());
    const shm::Segment& s = in.segment();
    constexpr int kBarriers = 2000;
    Team team(2);
    std::atomic<uint64_t> first{0}, last{0};
    auto member = [&](int me) {
        team.join(me);
        // Counted by member 0 between two barriers, so that attaching and
        // detaching (which take the lock) stay out.
        team.meet(me);
        if (me == 0) first.store(s.header.lock_acquisitions.load());
        team.meet(me);
        for (int b = 0; b < kBarriers; ++b)
            team.meet(me);
        if (me == 0) last.store(s.header.lock_acquisitions.load());
        team.meet(me);
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    };
    std::thread other(member, 1);
    member(0);
    other.join();
    EXPECT_EQ(last.load(), first.load())
        << "the barriers took the segment lock " << last.load() - first.load() << " times";
    expect_nothing_parked(s);
}

// Another process that needs the only CPU takes it from the thread that
// parked it, which sleeps on until it is resumed, and then gets a CPU back.
TEST(Park, AnotherProcessTakesTheCpuOfAPausedThread) {
    const std::vector<int> cpus = test::allowed_cpus();
    ASSERT_FALSE(cpus.empty());
    Joined in(binding(cpus, 1));
    ASSERT_TRUE(in.mapped());
    const shm::Segment& s = in.segment();
    Shared<Flags> flags;
    PausedThread paused(s);
    ASSERT_TRUE(paused.parked()) << "the paused thread did not park its CPU";
    const pid_t child = test::fork_child([&] {
        if (nosv_init() != NOSV_SUCCESS) return 10;
        nosv_task_t t = nullptr;
        // The only CPU is parked: the attach must take it, not wait for
        // the parker, which waits for us.
        if (nosv_attach(&t, nullptr, "taker", NOSV_ATTACH_NONE) != NOSV_SUCCESS) return 11;
        flags->attached.store(1);
        if (nosv_detach(NOSV_DETACH_NONE) != NOSV_SUCCESS) return 12;
        return nosv_shutdown() == NOSV_SUCCESS ? 0 : 13;
    });
    EXPECT_EQ(test::wait_child(child), 0);
    EXPECT_EQ(flags->attached.load(), 1);
    EXPECT_FALSE(paused.resumed()) << "the pause returned before its submit";
    paused.resume();
    expect_nothing_parked(s);
}

// Work of the same process bound to a parked CPU runs there while the
// parker sleeps; resumed, the parker gets a CPU again.
TEST(Park, ATaskBoundToAParkedCpuRunsWhileItsParkerSleeps) {
    const std::vector<int> cpus = test::allowed_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs: one parked, one for the submitter";
    Joined in(binding(cpus, 2));
    ASSERT_TRUE(in.mapped());
    const shm::Segment& s = in.segment();
    PausedThread paused(s);
    ASSERT_TRUE(paused.parked()) << "the paused thread did not park its CPU";
    nosv_task_t self = nullptr;
    ASSERT_EQ(nosv_attach(&self, nullptr, "submitter", NOSV_ATTACH_NONE), NOSV_SUCCESS);
    nosv_task_type_t type = nullptr;
    ASSERT_EQ(nosv_type_init(&type, record_cpu, nullptr, mark_completed, "bound", nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              NOSV_SUCCESS);
    nosv_task_t bound = nullptr;
    ASSERT_EQ(nosv_create(&bound, type, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
    nosv_affinity_t strict = nosv_affinity_get(uint32_t(paused.cpu()), NOSV_AFFINITY_LEVEL_CPU,
                                               NOSV_AFFINITY_TYPE_STRICT);
    nosv_set_task_affinity(bound, &strict);
    g_ran_on.store(-1);
    g_completed.store(false);
    ASSERT_EQ(nosv_submit(bound, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    // Waited for from a task, which keeps its own CPU meanwhile.
    ASSERT_TRUE(test::wait_until([] { return g_completed.load(); }))
        << "the task bound to the parked CPU did not run";
    EXPECT_EQ(g_ran_on.load(), paused.cpu());
    EXPECT_FALSE(paused.resumed()) << "the pause returned before its submit";
    paused.resume();
    ASSERT_EQ(nosv_destroy(bound, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    expect_nothing_parked(s);
}

namespace {

// Tasks for the test below: a pauser counts its start, pauses once and
// counts its end; a plain task counts its end.
std::atomic<int> g_started{0}, g_ended{0};

void pause_once(nosv_task_t) {
    g_started.fetch_add(1);
    EXPECT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
}
void count_end(nosv_task_t) {
    g_ended.fetch_add(1);
}
void nothing(nosv_task_t) {}

} // namespace

// Regression: a worker whose parked CPU was taken counted itself unblocked
// twice when it came back, so that the process soon believed it had more
// free workers than CPUs and started no new one when its pool was empty:
// fresh tasks then waited for ever while every worker was paused.
TEST(Park, WorkersWhoseParkedCpusWereTakenStillLeaveRoomForNewOnes) {
    const std::vector<int> cpus = coexec::test::allowed_cpus();
    ASSERT_FALSE(cpus.empty());
    Joined in(binding(cpus, 1));
    ASSERT_TRUE(in.mapped());
    const shm::Segment& s = in.segment();
    nosv_task_type_t pauser = nullptr, plain = nullptr;
    ASSERT_EQ(nosv_type_init(&pauser, pause_once, nullptr, count_end, "pauser", nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              NOSV_SUCCESS);
    ASSERT_EQ(nosv_type_init(&plain, nothing, nullptr, count_end, "plain", nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              NOSV_SUCCESS);
    g_started.store(0);
    g_ended.store(0);
    // A pauser parks the only CPU, a plain task takes it, and the pauser,
    // resumed, comes back to a lost park: four times.
    constexpr int kLost = 4;
    for (int i = 0; i < kLost; ++i) {
        nosv_task_t a = nullptr, b = nullptr;
        ASSERT_EQ(nosv_create(&a, pauser, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
        ASSERT_EQ(nosv_create(&b, plain, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
        const int ended = g_ended.load();
        ASSERT_EQ(nosv_submit(a, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        ASSERT_TRUE(test::wait_until([&] { return s.header.parked_cpus.load() == 1; }))
            << "round " << i << ": the pauser did not park the CPU";
        ASSERT_EQ(nosv_submit(b, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        ASSERT_TRUE(test::wait_until([&] { return g_ended.load() == ended + 1; }))
            << "round " << i << ": the plain task did not take the parked CPU";
        ASSERT_EQ(nosv_submit(a, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        ASSERT_TRUE(test::wait_until([&] { return g_ended.load() == ended + 2; }))
            << "round " << i << ": the pauser did not get a CPU back";
        ASSERT_EQ(nosv_destroy(a, NOSV_DESTROY_NONE), NOSV_SUCCESS);
        ASSERT_EQ(nosv_destroy(b, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    }
    // Now pausers one after the other, each submitted once the one before
    // paused: with every worker paused, only a new one can run the next,
    // and nobody but the submit starts one.
    constexpr int kPausers = 6;
    std::vector<nosv_task_t> pausers(kPausers);
    g_started.store(0);
    const int ended = g_ended.load();
    for (int i = 0; i < kPausers; ++i) {
        ASSERT_EQ(nosv_create(&pausers[size_t(i)], pauser, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
        ASSERT_EQ(nosv_submit(pausers[size_t(i)], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        EXPECT_TRUE(test::wait_until([&] { return g_started.load() == i + 1; }))
            << "pauser " << i << " did not start";
    }
    for (nosv_task_t t : pausers)
        ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_TRUE(test::wait_until([&] { return g_ended.load() == ended + kPausers; }));
    for (nosv_task_t t : pausers)
        ASSERT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_type_destroy(pauser, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_type_destroy(plain, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS);
    expect_nothing_parked(s);
}
