// Which CPUs the instance manages, and where they sit (hwloc).
#pragma once

#include <string>
#include <vector>

namespace coexec::scheduler {

struct CpuInfo {
    int system_id;   // kernel CPU number
    int core;        // hwloc core os_index (or the CPU itself)
    int system_numa; // NUMA node os_index (0 on machines without NUMA info)
};

// Parses a Linux CPU list ("0-3,8,10-11") into sorted unique ids. Returns
// false with a message on malformed input.
bool parse_cpu_list(const std::string& text, std::vector<int>& out, std::string& error);

// The CPUs to manage for a `topology.binding` value: "all" (every online
// CPU), "inherit" (the calling thread's affinity mask) or a CPU list. CPUs
// that are not online are rejected with a message.
bool discover_cpus(const std::string& binding, std::vector<CpuInfo>& out, std::string& error);

} // namespace coexec::scheduler
