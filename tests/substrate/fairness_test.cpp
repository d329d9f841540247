// Two CPU-bound processes on the same CPUs take turns: on every CPU the turn
// passes from one to the other and back, again and again. The turns are
// counted, not timed: how much CPU time each turn gives depends on how the
// kernel runs the holders, and is printed for information only.
#include "support.hpp"
#include "workload.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"

#include <nosv.h>

#include <array>
#include <thread>
#include <vector>

using namespace coexec;
using coexec::test::Shared;
using namespace std::chrono_literals;

namespace {

struct Control {
    std::atomic<bool> stop;
    std::atomic<int> ran[2]; // tasks each child has run
};
Shared<Control>* g_ctl;
int g_child = 0; // which child this process is
std::atomic<int> g_in_flight;

void burn(nosv_task_t) {
    test::Occupancy::spin(1000us);
    (*g_ctl)->ran[g_child].fetch_add(1);
}
void again(nosv_task_t t) {
    if ((*g_ctl)->stop.load())
        g_in_flight--;
    else
        nosv_submit(t, 0);
}

// Keeps 2 tasks per CPU in flight until told to stop.
int cpu_bound_child(int child) {
    g_child = child;
    if (nosv_init() != 0) return 11;
    nosv_task_type_t type;
    nosv_type_init(&type, burn, nullptr, again, "burn", nullptr, nullptr, 0);
    std::vector<nosv_task_t> tasks(size_t(2 * nosv_get_num_cpus()));
    g_in_flight = int(tasks.size());
    for (auto& t : tasks) {
        nosv_create(&t, type, 0, 0);
        nosv_submit(t, 0);
    }
    while (g_in_flight.load() > 0)
        std::this_thread::sleep_for(5ms);
    for (auto t : tasks)
        nosv_destroy(t, 0);
    nosv_type_destroy(type, 0);
    return nosv_shutdown() == 0 ? 0 : 12;
}

int32_t slot_of(const shm::Segment& s, pid_t pid) {
    for (int p = 0; p < shm::kMaxProcs; ++p)
        if (s.procs[p].state.load() == shm::ProcState::Alive && s.procs[p].pid == pid) return p;
    return shm::kNone;
}

// Turns each of the two processes started on each CPU, seen by sampling
// the CPUs' turn_proc: a change of owner is a turn of the new one. A
// sample may miss a turn (two changes between samples), never invent one.
class TurnCounter {
  public:
    TurnCounter(const shm::Segment& s, int32_t a, int32_t b) : s_(s), procs_{a, b} {
        for (int c = 0; c < s_.header.cpu_count; ++c)
            last_[size_t(c)] = s_.cpus[c].turn_proc.load();
    }
    void sample() {
        for (int c = 0; c < s_.header.cpu_count; ++c) {
            const int32_t now = s_.cpus[c].turn_proc.load();
            if (now == last_[size_t(c)]) continue;
            last_[size_t(c)] = now;
            for (size_t i = 0; i < 2; ++i)
                if (now == procs_[i]) ++turns_[size_t(c)][i];
        }
    }
    // Whether each process had `n` turns on every CPU.
    bool each_had(int n) const {
        for (int c = 0; c < s_.header.cpu_count; ++c)
            if (turns_[size_t(c)][0] < n || turns_[size_t(c)][1] < n) return false;
        return true;
    }
    std::string report() const {
        std::string r;
        for (int c = 0; c < s_.header.cpu_count; ++c)
            r += "CPU " + std::to_string(c) + ": A " + std::to_string(turns_[size_t(c)][0]) +
                 " turns, B " + std::to_string(turns_[size_t(c)][1]) + " turns; ";
        return r;
    }

  private:
    const shm::Segment& s_;
    std::array<int32_t, 2> procs_;
    std::array<int32_t, shm::kMaxCpus> last_{};
    std::array<std::array<int, 2>, shm::kMaxCpus> turns_{};
};

} // namespace

// Neither process keeps a CPU for good, whether it runs on one or on both:
// each gets turns on every CPU. A scheduler that let one process keep its
// CPUs (no round-robin), or let each keep the one it runs on (share turns
// that never end), fails here by running out of patience.
TEST(Fairness, TwoCpuBoundProcessesTakeTurnsOnEveryCpu) {
    constexpr int kTurns = 3;
    test::ScopedSegment seg;
    Shared<Control> ctl;
    g_ctl = &ctl;
    pid_t a = test::fork_child([] { return cpu_bound_child(0); });
    pid_t b = test::fork_child([] { return cpu_bound_child(1); });
    // Measured in a lambda, so that the children are stopped however it ends.
    auto measure = [&] {
        // Both are up and busy once each has run a task.
        ASSERT_TRUE(test::wait_until([&] {
            return ctl->ran[0].load() > 0 && ctl->ran[1].load() > 0;
        })) << "the children never both ran a task";
        auto map = seg.map();
        ASSERT_TRUE(map);
        const int32_t pa = slot_of(*map.get(), a), pb = slot_of(*map.get(), b);
        ASSERT_NE(pa, shm::kNone);
        ASSERT_NE(pb, shm::kNone);
        scheduler::SharedScheduler sched(*map.get());
        TurnCounter turns(*map.get(), pa, pb);
        const uint64_t t0 = shm::now_ns();
        const uint64_t a0 = sched.cpu_time().total_ns(pa, t0),
                       b0 = sched.cpu_time().total_ns(pb, t0);
        const bool took_turns = test::wait_until([&] {
            turns.sample();
            return turns.each_had(kTurns);
        });
        const uint64_t t1 = shm::now_ns();
        const double da = double(sched.cpu_time().total_ns(pa, t1) - a0);
        const double db = double(sched.cpu_time().total_ns(pb, t1) - b0);
        EXPECT_TRUE(took_turns) << turns.report();
        std::printf("%sCPU time over %.2f s: A %.3f s, B %.3f s; share A %.1f %%\n",
                    turns.report().c_str(), double(t1 - t0) / 1e9, da / 1e9, db / 1e9,
                    100 * da / (da + db));
    };
    measure();
    ctl->stop = true;
    EXPECT_EQ(test::wait_child(a, 30s), 0);
    EXPECT_EQ(test::wait_child(b, 30s), 0);
}
