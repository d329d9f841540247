// Which CPUs the instance manages, and where they sit (sysfs and libnuma).
#pragma once

#include "cgroup_limits.hpp"
#include "shm/layout.hpp"

#include <string>
#include <vector>

namespace coexec::scheduler {

struct CpuInfo {
    int system_id;   // kernel CPU number
    int core;        // core system id, as nOS-V's: its first managed thread sibling
    int system_numa; // NUMA node os_index (0 on machines without NUMA info)
};

// The CPUs an instance manages, and why those: `coexec info` shows it.
struct Discovery {
    std::vector<CpuInfo> cpus; // sorted by system id
    std::string origin;        // e.g. "affinity mask 0-3 within cgroup cpuset 0-3 (FILE)"
    int quota_cpus = 0;        // > 0: a CPU quota allows this many; `cpus` holds no more
    std::string quota_origin;  // where that quota came from
};

// The most CPU ids a Linux kernel has (NR_CPUS, 8,192 with MAXSMP): a CPU
// list naming an id at or past it is malformed. Which ids coexec can manage
// is discover_cpus()'s to say (below shm::kMaxCpus).
inline constexpr int kCpuIds = 8192;

// Parses a Linux CPU list ("0-3,8,10-11") into sorted unique ids below
// kCpuIds. Returns false with a message on malformed input.
bool parse_cpu_list(const std::string& text, std::vector<int>& out, std::string& error);

// The reverse: sorted unique ids as a Linux CPU list ("0-3,8").
std::string format_cpu_list(const std::vector<int>& ids);

// The CPUs to manage for a `topology.binding` value:
//  - "inherit": the calling thread's affinity mask (a container's cpuset
//    already bounds it);
//  - "all": every online CPU of the process's cgroup cpuset;
//  - a CPU list, every CPU of which must be online and in the cpuset.
// A CPU quota (`limits.quota_cpus`) then keeps that many CPUs, one per core
// before a second of any core, so that at most that many run coexec
// threads at once. Returns false with a message when nothing is left or the
// binding names a CPU it may not use.
// The CPUs, their cores and NUMA nodes come from `sysfs_cpu` (sysfs's
// devices/system/cpu; tests pass a tree of their own) and libnuma.
bool discover_cpus(const std::string& binding, Discovery& out, std::string& error,
                   const CgroupLimits& limits = read_cgroup_limits(),
                   const std::string& sysfs_cpu = "/sys/devices/system/cpu");

// What a process names as its NUMA node: the kernel CPUs of its affinity
// mask, and the kernel NUMA nodes its memory policy binds it to or prefers
// (none for the default policy). read_own_placement() reads them for the
// calling thread.
struct OwnPlacement {
    std::vector<int> cpus;
    std::vector<int> memory_nodes;
};
OwnPlacement read_own_placement();

// The logical NUMA node of `segment` that `own` names, for the process's
// work that may run anywhere (ProcSlot::home_numa): the node of every
// managed CPU in its affinity mask, when they are all on one node, else the
// one node its memory policy names; kNone when neither names exactly one
// node, or the segment has a single node.
int32_t home_numa_node(const shm::Segment& segment, const OwnPlacement& own);

} // namespace coexec::scheduler
