#include "membership.hpp"

#include "scheduler/topology.hpp"
#include "shm/liveness.hpp"

#include <nosv/error.h>

#include <algorithm>
#include <sys/prctl.h>
#include <unistd.h>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

namespace {

std::string process_name() {
    char name[17] = {};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    return name;
}

SegmentConfig segment_config(const Config& c) {
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

int Membership::join(const Config& config, std::string& why) {
    std::vector<scheduler::CpuInfo> cpus;
    if (!scheduler::discover_cpus(config.binding, cpus, why)) return NOSV_ERR_INVALID_PARAMETER;

    const SegmentConfig settings = segment_config(config);
    SegmentOptions options;
    options.name = config.shm_name;
    options.isolation = config.isolation;
    options.initialize = [&](Segment& s) { scheduler::SharedScheduler(s).format(cpus, settings); };
    SegmentError error;
    mapping_ = SegmentMapping::open(options, error);
    if (!mapping_) {
        why = error.message;
        return error.kind == SegmentError::Kind::Permission ? NOSV_ERR_INVALID_OPERATION
                                                            : NOSV_ERR_UNKNOWN;
    }
    sched_ = std::make_unique<scheduler::SharedScheduler>(segment());
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        sched_->reap_dead(wakes);
        // Nobody is left: reclaim the segment with this process's view.
        if (sched_->empty()) sched_->format(cpus, settings);
        proc_ =
            sched_->register_process(::getpid(), process_start_time(::getpid()), process_name());
    }
    wakes.flush(segment());
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
        auto lock = sched_->lock(wakes);
        sched_->unregister_process(proc_, wakes);
    }
    wakes.flush(segment());
    // The last process out takes the segment's name with it: nothing stays
    // in /dev/shm once an instance is done.
    mapping_.remove_if_last();
}

int Membership::logical_cpu(int system_id) const {
    return index_of(cpu_system_ids_, system_id);
}

int Membership::logical_numa(int system_id) const {
    return index_of(numa_system_ids_, system_id);
}

} // namespace coexec::core
