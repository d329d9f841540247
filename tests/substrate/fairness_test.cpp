// Two CPU-bound processes on the same CPUs take turns by quantum: each gets
// half of the CPU time the scheduler hands out.
#include "support.hpp"
#include "workload.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"

#include <nosv.h>

#include <thread>
#include <vector>

using namespace coexec;
using coexec::test::Shared;
using namespace std::chrono_literals;

namespace {

struct Control {
    std::atomic<bool> stop;
};
Shared<Control>* g_ctl;
std::atomic<int> g_in_flight;

void burn(nosv_task_t) {
    test::Occupancy::spin(1000us);
}
void again(nosv_task_t t) {
    if ((*g_ctl)->stop.load())
        g_in_flight--;
    else
        nosv_submit(t, 0);
}

// Keeps 2 tasks per CPU in flight until told to stop.
int cpu_bound_child() {
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

} // namespace

TEST(Fairness, TwoCpuBoundProcessesShareHalfAndHalf) {
    test::ScopedSegment seg;
    Shared<Control> ctl;
    g_ctl = &ctl;
    pid_t a = test::fork_child(cpu_bound_child);
    pid_t b = test::fork_child(cpu_bound_child);
    shm::SegmentMapping map;
    int32_t pa = shm::kNone, pb = shm::kNone;
    for (int i = 0; i < 400 && (pa == shm::kNone || pb == shm::kNone); ++i) {
        std::this_thread::sleep_for(5ms);
        shm::SegmentError e;
        if (!map) map = shm::SegmentMapping::open(seg.options(), e);
        if (map) {
            pa = slot_of(*map.get(), a);
            pb = slot_of(*map.get(), b);
        }
    }
    ASSERT_NE(pa, shm::kNone);
    ASSERT_NE(pb, shm::kNone);
    scheduler::SharedScheduler sched(*map.get());
    std::this_thread::sleep_for(300ms); // both are up and busy
    uint64_t t0 = shm::now_ns();
    uint64_t a0 = sched.cpu_time_ns(pa, t0), b0 = sched.cpu_time_ns(pb, t0);
    std::this_thread::sleep_for(2s);
    uint64_t t1 = shm::now_ns();
    double da = double(sched.cpu_time_ns(pa, t1) - a0), db = double(sched.cpu_time_ns(pb, t1) - b0);
    ctl->stop = true;
    EXPECT_EQ(test::wait_child(a, 30s), 0);
    EXPECT_EQ(test::wait_child(b, 30s), 0);
    double share_a = da / (da + db);
    std::printf("CPU time over %.2f s: A %.3f s, B %.3f s; share A %.1f %%\n",
                double(t1 - t0) / 1e9, da / 1e9, db / 1e9, 100 * share_a);
    EXPECT_GT(da + db, 0.5 * double(t1 - t0)); // the CPUs were really in use
    EXPECT_NEAR(share_a, 0.5, 0.10);
}
