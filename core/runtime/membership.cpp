#include "core/runtime/membership.hpp"

#include "scheduler/invariants.hpp"
#include "scheduler/topology.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <nosv/error.h>

#include <algorithm>
#include <sys/prctl.h>
#include <unistd.h>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::SharedScheduler;
using scheduler::WakeList;

namespace {

std::string process_name() {
    char name[17] = {};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    return name;
}

SegmentConfig segment_config(const config::Config& c) {
    SegmentConfig sc{};
    sc.quantum_ns = c.quantum_ns;
    sc.preempt_after_ns = c.preempt_after_ns;
    sc.governor_policy = uint32_t(c.governor);
    sc.governor_spins = c.governor_spins;
    sc.isolation = c.isolation;
    return sc;
}

int index_of(const std::vector<int>& ids, int id) {
    auto it = std::find(ids.begin(), ids.end(), id);
    return it == ids.end() ? -1 : int(it - ids.begin());
}

} // namespace

int Membership::enter(const config::Config& config, std::string& why) {
    // Only the process that lays out the CPU table discovers the topology
    // (reading sysfs for every CPU costs time that hundreds of processes
    // entering at once would each pay); a malformed CPU list is an error for all.
    if (std::vector<int> ids; config.binding != "all" && config.binding != "inherit" &&
                              !scheduler::parse_cpu_list(config.binding, ids, why))
        return NOSV_ERR_INVALID_PARAMETER;
    const SegmentConfig settings = segment_config(config);
    SegmentOptions options;
    options.name = config.shm_name;
    options.isolation = config.isolation;
    // Empty tables and no CPUs: the first member formats the CPU table.
    options.initialize = [&](Segment& s) {
        scheduler::SharedScheduler(s).format_unpublished({}, settings);
    };
    SegmentError error;
    mapping_ = SegmentMapping::open(options, error);
    if (!mapping_) {
        why = error.message;
        return error.kind == SegmentError::Kind::Permission ? NOSV_ERR_INVALID_OPERATION
                                                            : NOSV_ERR_UNKNOWN;
    }
    sched_ = std::make_unique<scheduler::SharedScheduler>(segment());
    auto& sched = *sched_;
    bool discovered = true, corrupt = false;
    // Dead members are looked for before the lock is taken (/proc reads):
    // once per interval system-wide, not at every entry, and always when the
    // oldest member died (a segment whose members all died is reclaimed now).
    // A formatted segment only: a fresh one has no members to read.
    // Read before the lock too: it is a /proc read.
    const pid_t pid = ::getpid();
    const uint64_t start = process_start_time(pid);
    SharedScheduler::DeadMembers dead;
    if (segment().header.cpu_count > 0 &&
        (sched.watch().claim_reap(now_ns(), scheduler::MemberWatch::kReapIntervalNs) ||
         !sched.watch().oldest_member_alive()))
        dead = sched.watch().find_dead(now_ns(), 0);
    // What an earlier image of this process held (it called execve(), from
    // a shell script, `pyenv exec` or `env`, say) is freed at once: it holds
    // CPUs and cannot run any more.
    // (A member named twice is freed once: reap() skips a freed slot.)
    if (segment().header.cpu_count > 0)
        for (const auto& m : sched.watch().remnants_of(pid, start))
            dead.push_back(m);
    // System calls, outside the lock: the node the process's affinity or
    // memory policy names, which its unbound work prefers.
    const scheduler::OwnPlacement own = scheduler::read_own_placement();
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        // A segment found at attach may hold anything: it is checked whole
        // before this process trusts a single index in it, by one entering
        // member per interval (a burst of entries checks it once, not once
        // each: claim_entry_check()).
        if (const auto violations = sched.watch().claim_entry_check(now_ns())
                                        ? scheduler::check_invariants(segment())
                                        : std::vector<std::string>{};
            !violations.empty()) {
            lock.skip_check();
            why = "shared segment " + mapping_.shm_name() + " is corrupt: " + violations.front() +
                  (violations.size() > 1 ? " (and " + std::to_string(violations.size() - 1) +
                                               " more; `coexec check` lists them)"
                                         : "") +
                  "; remove it with `coexec reset --force`";
            corrupt = true;
        }
        if (!corrupt) sched.reap(dead, wakes);
        if (!corrupt && (!sched.formatted() || sched.empty())) {
            // A fresh segment, or nobody is left: (re)claim it with this
            // process's view.
            scheduler::Discovery found;
            discovered = scheduler::discover_cpus(config.binding, found, why);
            if (discovered && found.cpus.size() > size_t(segment().header.max_cpus)) {
                // A segment created with fewer CPU slots than this view
                // names (by a process that saw fewer CPUs): refused, never
                // cut short.
                why = std::to_string(found.cpus.size()) + " CPUs to manage (" + found.origin +
                      "), but shared segment " + mapping_.shm_name() + " was created for " +
                      std::to_string(segment().header.max_cpus) +
                      "; remove it with `coexec reset --force` when no process uses it";
                discovered = false;
            }
            if (discovered) sched.format(found, settings);
        }
        if (!corrupt && discovered)
            proc_ = sched.procs().register_process(pid, start, process_name(),
                                                   scheduler::home_numa_node(segment(), own));
    }
    wakes.flush(segment());
    if (!corrupt && discovered && proc_ == kNone) {
        // A full table may hold dead members' slots: sweep every member,
        // outside the lock, and try once more.
        dead = sched.watch().find_dead(now_ns(), 0);
        {
            scheduler::SchedulerLock lock(sched, wakes);
            if (sched.reap(dead, wakes))
                proc_ = sched.procs().register_process(pid, start, process_name(),
                                                       scheduler::home_numa_node(segment(), own));
        }
        wakes.flush(segment());
    }
    if (corrupt) {
        mapping_ = {};
        return NOSV_ERR_UNKNOWN;
    }
    if (!discovered) {
        mapping_.remove_if_last(); // a segment without CPUs is of no use
        mapping_ = {};
        return NOSV_ERR_INVALID_PARAMETER;
    }
    if (proc_ == kNone) {
        why = "the shared segment has no free process slot (all " + std::to_string(kMaxProcs) +
              " are in use)";
        mapping_ = {};
        return NOSV_ERR_OUT_OF_MEMORY;
    }
    const Segment& s = segment();
    for (int c = 0; c < s.header.cpu_count; ++c) {
        cpu_system_ids_.push_back(s.cpus[c].system_id);
        if (index_of(numa_system_ids_, s.cpus[c].system_numa) < 0)
            numa_system_ids_.push_back(s.cpus[c].system_numa);
    }
    std::sort(numa_system_ids_.begin(), numa_system_ids_.end());
    return NOSV_SUCCESS;
}

void Membership::leave() {
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(*sched_, wakes);
        sched_->unregister_process(proc_, wakes);
    }
    wakes.flush(segment());
    // The last process out takes the segment's name with it: nothing stays
    // in /dev/shm once an instance is done.
    mapping_.remove_if_last();
}

void Membership::leave_at_exit() const {
    sched_->procs().mark_departing(proc_);
    mapping_.leave_at_exit();
}

int Membership::logical_cpu(int system_id) const {
    return index_of(cpu_system_ids_, system_id);
}

int Membership::logical_numa(int system_id) const {
    return index_of(numa_system_ids_, system_id);
}

} // namespace coexec::core
