// A team barrier whose waiters sleep: one attached thread per managed CPU
// meets the others at a barrier again and again; each arrival but the last
// pauses (nosv_pause), and the last submits the paused ones. This is what
// an OpenMP team does at every barrier under the OpenMP adapter when its
// threads sleep there (KMP_BLOCKTIME=0, OMP_WAIT_POLICY=passive, or a wait
// past the block time): a thread leaves its CPU and is handed one back.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

#include <nosv/hwinfo.h>

#include <atomic>
#include <thread>
#include <vector>

namespace coexec::bench {
namespace {

// The team's meeting point. The barrier counts arrivals; the last arrival
// resets the count, opens the next round and submits everyone else, who
// each paused (or will: nOS-V banks a submit that comes before the pause).
struct Team {
    int size = 0;
    std::vector<nosv_task_t> tasks;
    std::atomic<int> arrived{0};
    std::atomic<int64_t> round{0};
};

void meet(Team& team, int me) {
    const int64_t round = team.round.load(std::memory_order_acquire);
    if (team.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 < team.size) {
        // Every waiter gets exactly one submit per round, so each pause
        // returns once the round is over (at once if the submit came first).
        check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
        if (team.round.load(std::memory_order_acquire) == round)
            fail("barrier: a waiter returned from nosv_pause before its round ended");
        return;
    }
    team.arrived.store(0, std::memory_order_relaxed);
    // Release: the reset count is seen by whoever reads the new round.
    team.round.store(round + 1, std::memory_order_release);
    for (int i = 0; i < team.size; ++i)
        if (i != me) check(nosv_submit(team.tasks[size_t(i)], NOSV_SUBMIT_NONE), "nosv_submit");
}

void body(const Options& options, SampleBuffer& out) {
    Runtime runtime;
    Team team;
    team.size = std::max(2, nosv_get_num_cpus());
    team.tasks.resize(size_t(team.size));
    const int64_t barriers = std::max<int64_t>(1, options.handoffs / 4);
    const LockCounter locks(options.segment);
    std::atomic<int> ready{0};
    // Each repeat: the team's members meet `barriers` times; the first
    // member times the run between two barriers, so that attaching is left
    // out.
    auto member = [&](int me, std::vector<double>* ns, std::vector<double>* per_lock) {
        Attached self("bench-team");
        team.tasks[size_t(me)] = self.task();
        ready.fetch_add(1, std::memory_order_acq_rel);
        while (ready.load(std::memory_order_acquire) < team.size)
            std::this_thread::yield();
        meet(team, me);                              // every task is known to everyone from here on
        for (int r = 0; r <= options.repeats; ++r) { // repeat 0 warms up
            meet(team, me);
            const uint64_t start = now_ns();
            const uint64_t locks_before = me == 0 ? locks.read() : 0;
            for (int64_t b = 0; b < barriers; ++b)
                meet(team, me);
            if (me != 0 || r == 0) continue;
            ns->push_back(double(now_ns() - start) / double(barriers));
            per_lock->push_back(double(locks.read() - locks_before) / double(barriers));
        }
    };
    std::vector<double> ns, per_lock;
    std::vector<std::thread> threads;
    for (int i = 1; i < team.size; ++i)
        threads.emplace_back(member, i, nullptr, nullptr);
    member(0, &ns, &per_lock);
    for (std::thread& t : threads)
        t.join();
    for (size_t r = 0; r < ns.size(); ++r)
        out.push(ns[r], per_lock[r]);
}

} // namespace

Outcome measure_team_barrier(const Options& options) {
    return run_in_child(options, body);
}

} // namespace coexec::bench
