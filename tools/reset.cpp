// `coexec reset`: removes a segment nobody uses any more.
#include "commands.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <cstring>
#include <fmt/format.h>
#include <iostream>

namespace coexec::cli {
namespace {

using shm::SegmentError;

// "1234 (name), 5678 (other)" for every live registered process.
std::string live_processes(const shm::Segment& s, int& count) {
    std::string list;
    count = 0;
    for (const auto& p : s.procs) {
        if (p.state.load(std::memory_order_relaxed) != shm::ProcState::Alive) continue;
        if (!scheduler::MemberWatch::member_alive(p)) continue;
        std::string name(p.name, strnlen(p.name, sizeof p.name));
        list += fmt::format("{}{} ({})", count++ ? ", " : "", p.pid, name);
    }
    return list;
}

int unlink_segment(const Target& target) {
    std::string message;
    if (!shm::SegmentMapping::unlink(target.options, message)) {
        print_error(message);
        return 1;
    }
    std::cout << "removed shared segment " << target.shm_name << "\n";
    return 0;
}

// Reaps dead processes and removes the segment when none is
// left alive; the name is removed under the lock so that no process can
// register in between.
int reset_when_unused(const Target& target, shm::SegmentMapping& mapping) {
    scheduler::SharedScheduler sched(*mapping.get());
    scheduler::WakeList wakes;
    int live = 0;
    std::string pids;
    bool unused = false;
    int status = 0;
    const auto dead = sched.watch().find_dead(shm::now_ns(), 0); // /proc reads, before the lock
    {
        scheduler::SchedulerLock guard(sched, wakes, scheduler::SchedulerLock::Check::No);
        sched.reap(dead, wakes);
        unused = sched.empty();
        if (unused)
            status = unlink_segment(target);
        else
            pids = live_processes(*mapping.get(), live);
    }
    // Reaping may have handed CPUs of dead processes to live ones.
    wakes.flush(*mapping.get());
    if (unused) return status;
    print_error(fmt::format("shared segment {} is in use by {} live process{}: {}; stop {} first "
                            "(or use --force)",
                            target.shm_name, live, live == 1 ? "" : "es", pids,
                            live == 1 ? "it" : "them"));
    return 1;
}

} // namespace

int reset_command(const GlobalOptions& global, bool force) {
    std::string problem;
    std::optional<Target> target = resolve_target(global, problem);
    if (!target) {
        print_error(problem);
        return 1;
    }
    // --force never maps the segment: it may be foreign, corrupt, or held
    // locked by a hung process.
    if (force) return unlink_segment(*target);
    SegmentError error;
    shm::SegmentMapping mapping = open_existing(*target, error);
    if (!mapping) {
        print_error(error.message);
        return 1;
    }
    return reset_when_unused(*target, mapping);
}

} // namespace coexec::cli
