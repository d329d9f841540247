// `coexec check`: verifies the invariants of a live segment, and that its
// CPUs are held by threads that can use them.
#include "commands.hpp"

#include "scheduler/holder_liveness.hpp"
#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <thread>

namespace coexec::cli {
namespace {

// A holder hands its CPU to another thread of its process without the lock,
// so one look, even under the lock, can catch that change half done. A
// corruption stays; a hand-off is over within microseconds. So the segment
// is reported unsound only when every look finds a violation.
constexpr int kLooks = 3;
constexpr auto kBetweenLooks = std::chrono::milliseconds(20);

struct Look {
    std::vector<std::string> violations;
    int32_t cpus = 0;
    int32_t processes = 0;
    int32_t threads = 0; // thread slots in use
};

Look look(scheduler::SharedScheduler& sched) {
    shm::Segment& s = sched.segment();
    scheduler::WakeList wakes;
    Look result;
    {
        // A dead holder's half-done change is repaired before we look.
        scheduler::SchedulerLock guard(sched, wakes, scheduler::SchedulerLock::Check::No);
        result.violations = scheduler::check_invariants(s);
        result.cpus = s.header.cpu_count;
        result.processes = s.header.alive_count;
        for (const auto& th : s.threads)
            result.threads += th.state.load(std::memory_order_relaxed) != shm::ThreadState::Unused;
    }
    // A repair may have handed CPUs of dead processes to live ones.
    wakes.flush(s);
    return result;
}

std::string count(int32_t n, const char* singular, const char* plural) {
    return fmt::format("{} {}", n, n == 1 ? singular : plural);
}

} // namespace

int check_command(const GlobalOptions& global) {
    std::optional<OpenSegment> open = open_for_reading(global);
    if (!open) return 2; // 1 means "violations found"
    scheduler::SharedScheduler sched(*open->mapping.get());
    Look last = look(sched);
    for (int i = 1; i < kLooks && !last.violations.empty(); ++i) {
        std::this_thread::sleep_for(kBetweenLooks);
        last = look(sched);
    }
    // Sound bytes can still hide a CPU that no thread uses: a holder that
    // died, or one asleep in the kernel past its turn, while others wait.
    for (auto& v : scheduler::check_holders(sched))
        last.violations.push_back(std::move(v));
    const std::string& name = open->target.shm_name;
    if (last.violations.empty()) {
        std::cout << fmt::format("coexec check: segment {} is sound: {}, {}, {}\n", name,
                                 count(last.cpus, "CPU", "CPUs"),
                                 count(last.processes, "process", "processes"),
                                 count(last.threads, "thread", "threads"));
        return 0;
    }
    std::cout << fmt::format("coexec check: segment {} violates its invariants:\n", name);
    for (const auto& v : last.violations)
        std::cout << "  " << v << "\n";
    return 1;
}

} // namespace coexec::cli
