#include "topology.hpp"

#include "scheduler/kernel_affinity.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <numa.h>
#include <sched.h>
#include <unistd.h>

namespace coexec::scheduler {
namespace {

bool affinity_ids(std::vector<int>& ids, std::string& error) {
    // The kernel's mask (not libcoexec's sched_getaffinity export).
    cpu_set_t set;
    if (!kernel_own_affinity(set)) {
        error = "cannot read the process affinity mask";
        return false;
    }
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) ids.push_back(i);
    return true;
}

// The first line of a sysfs file, or "" when it cannot be read.
std::string read_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

// The kernel's online CPUs, each with its core and NUMA node, as hwloc's
// Linux backend reads them: the core is topology/core_id (hwloc's core
// os_index; the CPU itself where sysfs hides it) and the node comes from
// libnuma (node 0 on a kernel without NUMA). Read here rather than through
// hwloc: its topology load dlopens its plugins (OpenCL, GL, PCI, XML and
// their libraries), which made up most of the nosv_init of a process that
// lays out a segment, the first of every instance (docs/scheduler.md).
bool online_cpus(std::vector<CpuInfo>& out, std::string& error) {
    const std::string sys = "/sys/devices/system/cpu/";
    std::vector<int> ids;
    if (std::string why; !parse_cpu_list(read_line(sys + "online"), ids, why)) {
        // Some containers hide sysfs: every configured CPU then counts.
        const long n = ::sysconf(_SC_NPROCESSORS_CONF);
        if (n < 1) {
            error = "cannot tell which CPUs are online (" + sys + "online: " + why + ")";
            return false;
        }
        ids.clear();
        for (int i = 0; i < n && i < CPU_SETSIZE; ++i)
            ids.push_back(i);
    }
    const bool numa = ::numa_available() >= 0;
    out.clear();
    for (int id : ids) {
        char* end = nullptr;
        const std::string core_text =
            read_line(sys + "cpu" + std::to_string(id) + "/topology/core_id");
        const long core = std::strtol(core_text.c_str(), &end, 10);
        const bool have_core = !core_text.empty() && *end == '\0' && core >= 0;
        const int node = numa ? ::numa_node_of_cpu(id) : 0;
        out.push_back({id, have_core ? int(core) : id, node < 0 ? 0 : node});
    }
    return true;
}

bool contains(const std::vector<int>& sorted, int id) {
    return std::binary_search(sorted.begin(), sorted.end(), id);
}

// Keeps `n` CPUs, taking the first CPU of each core before the second of
// any, so that a quota of n CPUs gets n cores where the machine has them.
void keep_spread(std::vector<CpuInfo>& cpus, int n) {
    std::vector<CpuInfo> kept;
    for (int round = 0; int(kept.size()) < n; ++round) {
        std::vector<int> seen; // cores that gave a CPU before this one, this round
        for (const CpuInfo& c : cpus) {
            const int before = int(std::count(seen.begin(), seen.end(), c.core));
            seen.push_back(c.core);
            if (before == round && int(kept.size()) < n) kept.push_back(c);
        }
    }
    std::sort(kept.begin(), kept.end(), [](auto& a, auto& b) { return a.system_id < b.system_id; });
    cpus = std::move(kept);
}

} // namespace

bool parse_cpu_list(const std::string& text, std::vector<int>& out, std::string& error) {
    out.clear();
    size_t pos = 0;
    auto bad = [&] {
        error = "invalid CPU list '" + text + "' (expected e.g. 0-3,6)";
        return false;
    };
    if (text.empty()) return bad();
    while (pos < text.size()) {
        char* end = nullptr;
        errno = 0;
        long lo = std::strtol(text.c_str() + pos, &end, 10);
        if (end == text.c_str() + pos || errno || lo < 0 || lo >= 4096) return bad();
        long hi = lo;
        pos = size_t(end - text.c_str());
        if (pos < text.size() && text[pos] == '-') {
            hi = std::strtol(text.c_str() + pos + 1, &end, 10);
            if (end == text.c_str() + pos + 1 || hi < lo || hi >= 4096) return bad();
            pos = size_t(end - text.c_str());
        }
        for (long i = lo; i <= hi; ++i)
            out.push_back(int(i));
        if (pos < text.size()) {
            if (text[pos] != ',') return bad();
            if (++pos == text.size()) return bad();
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return true;
}

std::string format_cpu_list(const std::vector<int>& ids) {
    std::string out;
    for (size_t i = 0; i < ids.size();) {
        size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
            ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(ids[i]);
        if (j > i) {
            // Appended in two steps: GCC 12's -Wrestrict misreads
            // "-" + std::string at -O3.
            out += '-';
            out += std::to_string(ids[j]);
        }
        i = j + 1;
    }
    return out;
}

bool discover_cpus(const std::string& binding, Discovery& out, std::string& error,
                   const CgroupLimits& limits) {
    out = {};
    std::vector<int> ids;
    if (binding == "inherit") {
        if (!affinity_ids(ids, error)) return false;
        out.origin = "affinity mask " + format_cpu_list(ids);
    } else if (binding == "all") {
        out.origin = "every online CPU";
    } else {
        if (!parse_cpu_list(binding, ids, error)) return false;
        out.origin = "topology.binding " + format_cpu_list(ids);
    }
    const bool cpuset = !limits.cpuset.empty();
    if (cpuset) {
        out.origin += " within cgroup cpuset " + format_cpu_list(limits.cpuset) + " (" +
                      limits.cpuset_file + ")";
        if (binding == "all") {
            ids = limits.cpuset;
        } else if (binding != "inherit") {
            for (int id : ids)
                if (!contains(limits.cpuset, id)) {
                    error = "topology.binding names CPU " + std::to_string(id) +
                            ", which the process's cgroup cpuset " +
                            format_cpu_list(limits.cpuset) + " (" + limits.cpuset_file +
                            ") excludes";
                    return false;
                }
        }
    }
    std::vector<CpuInfo> all;
    if (!online_cpus(all, error)) return false;
    for (const CpuInfo& c : all) {
        // The affinity mask and the cpuset may name CPUs that are offline.
        const bool wanted = ids.empty() ? binding == "all" : contains(ids, c.system_id);
        if (wanted && (!cpuset || contains(limits.cpuset, c.system_id))) out.cpus.push_back(c);
    }
    if (binding != "all" && binding != "inherit") {
        for (int id : ids)
            if (std::none_of(all.begin(), all.end(), [&](auto& c) { return c.system_id == id; })) {
                error =
                    "topology.binding names CPU " + std::to_string(id) + ", which is not online";
                return false;
            }
    }
    if (out.cpus.empty()) {
        error = "no CPU to manage (" + out.origin + ")";
        return false;
    }
    if (limits.quota_cpus > 0) {
        if (limits.quota_cpus < int(out.cpus.size())) keep_spread(out.cpus, limits.quota_cpus);
        out.quota_cpus = limits.quota_cpus;
        out.quota_origin = limits.quota_source;
    }
    return true;
}

} // namespace coexec::scheduler
