#include "holder_liveness.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;

// One Running CPU whose holder looked unable to use it.
struct Suspect {
    int32_t cpu;
    int32_t thread;
    int32_t proc;
    pid_t pid;
    pid_t tid;
    uint64_t since_ns; // the holder's stint: a hand-off or grant moves it
    bool dead;         // the process is gone; else the thread is asleep
    int64_t run_ns;    // the thread's CPU time when first seen (asleep only)
};

bool in_range(int32_t i, int32_t n) {
    return i >= 0 && i < n;
}

// Whether `c` is still held Running by the same thread in the same stint.
bool still_held(const Segment& s, const Suspect& x) {
    const CpuSlot& cpu = s.cpus[x.cpu];
    return cpu.state.load(rlx) == CpuState::Running && cpu.owner_thread.load(rlx) == x.thread &&
           cpu.since_ns.load(rlx) == x.since_ns;
}

std::vector<Suspect> find_suspects(const SharedScheduler& sched, uint64_t now) {
    const Segment& s = sched.segment();
    std::vector<Suspect> found;
    const SegmentConfig& cfg = s.header.config;
    const uint64_t turn = Policy::kShareTurnQuanta * cfg.quantum_ns + cfg.preempt_after_ns;
    const int32_t cpus = std::clamp(s.header.cpu_count, 0, s.header.max_cpus);
    for (int32_t c = 0; c < cpus; ++c) {
        const CpuSlot& cpu = s.cpus[c];
        if (cpu.state.load(rlx) != CpuState::Running) continue;
        const int32_t t = cpu.owner_thread.load(rlx), p = cpu.owner_proc.load(rlx);
        if (!in_range(t, kMaxThreads) || !in_range(p, kMaxProcs)) continue;
        if (!sched.policy().foreign_work(p, c)) continue; // nobody is kept from it
        const ProcSlot& proc = s.procs[p];
        Suspect x{c, t, p, proc.pid, s.threads[t].tid.load(rlx), cpu.since_ns.load(rlx), false, 0};
        if (!MemberWatch::member_alive(proc)) {
            x.dead = true;
            found.push_back(x);
            continue;
        }
        if (x.tid <= 0 || now < x.since_ns || now - x.since_ns < turn) continue;
        if (thread_on_cpu(x.pid, x.tid)) continue;
        x.run_ns = thread_run_ns(x.pid, x.tid);
        if (x.run_ns >= 0) found.push_back(x);
    }
    return found;
}

} // namespace

std::vector<std::string> check_holders(const SharedScheduler& sched,
                                       const HolderCheckOptions& options) {
    const Segment& s = sched.segment();
    std::vector<std::string> violations;
    std::vector<Suspect> suspects = find_suspects(sched, now_ns());
    if (suspects.empty()) return violations;
    std::this_thread::sleep_for(std::chrono::nanoseconds(options.grace_ns));
    const uint64_t now = now_ns();
    for (const Suspect& x : suspects) {
        if (!still_held(s, x) || !sched.policy().foreign_work(x.proc, x.cpu)) continue;
        const double held_s = double(now - x.since_ns) / 1e9;
        if (x.dead) {
            violations.push_back("CPU " + std::to_string(x.cpu) + " is held by thread slot " +
                                 std::to_string(x.thread) + " of process " + std::to_string(x.pid) +
                                 ", which is gone (held " + std::to_string(held_s) +
                                 " s while others wait)");
            continue;
        }
        // Asleep throughout: it ran for no time at all since the first look.
        if (thread_on_cpu(x.pid, x.tid) || thread_run_ns(x.pid, x.tid) != x.run_ns) continue;
        violations.push_back("CPU " + std::to_string(x.cpu) + " is held by thread " +
                             std::to_string(x.tid) + " of process " + std::to_string(x.pid) +
                             ", asleep in the kernel (held " + std::to_string(held_s) +
                             " s, past its turn, while others wait)");
    }
    return violations;
}

} // namespace coexec::scheduler
