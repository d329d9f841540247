#include "topology.hpp"

#include "scheduler/kernel_affinity.hpp"
#include "scheduler/read_line.hpp"
#include "shm/layout.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <unistd.h>

namespace coexec::scheduler {
namespace {

// Words of the node mask get_mempolicy() fills: 1,024 nodes, as libnuma.
constexpr int kMaxNodeWords = 16;

bool affinity_ids(std::vector<int>& ids, std::string& error) {
    // The kernel's mask (not libcoexec's sched_getaffinity export).
    CpuMask mask;
    if (!mask.read_own()) {
        error = "cannot read the process affinity mask (a node with more than " +
                std::to_string(CpuMask::kIds) + " possible CPUs?)";
        return false;
    }
    for (int i = 0; i < CpuMask::kIds; ++i)
        if (mask.test(i)) ids.push_back(i);
    return true;
}

bool contains(const std::vector<int>& sorted, int id) {
    return std::binary_search(sorted.begin(), sorted.end(), id);
}

// The kernel's online CPUs, from `sys` (sysfs's devices/system/cpu). Read
// here, as with the siblings and nodes below, rather than through hwloc: its
// topology load dlopens its plugins (OpenCL, GL, PCI, XML and their
// libraries), which made up most of the nosv_init of a process that lays out
// a segment, the first of every instance (docs/design.md, "Topology from
// hwloc").
bool online_cpus(const std::string& sys, std::vector<int>& ids, std::string& error) {
    std::string online, why;
    if (read_line(sys + "/online", online) && parse_cpu_list(online, ids, why)) return true;
    // Some containers hide sysfs: every configured CPU then counts.
    const long n = ::sysconf(_SC_NPROCESSORS_CONF);
    if (n < 1) {
        error = "cannot tell which CPUs are online (" + sys +
                "/online: " + (why.empty() ? "unreadable" : why) + ")";
        return false;
    }
    ids.clear();
    for (int i = 0; i < n && i < CPU_SETSIZE; ++i)
        ids.push_back(i);
    return true;
}

// A managed CPU's thread siblings (its core's CPUs), sorted.
struct Siblings {
    int id;
    std::vector<int> cpus;
};

// The thread siblings of each of `cpus` (sorted by id), from
// topology/thread_siblings_list: one read per core, as a core's threads
// share the list; the CPU alone where sysfs hides it.
std::vector<Siblings> read_siblings(const std::string& sys, const std::vector<CpuInfo>& cpus) {
    std::vector<Siblings> out;
    for (const CpuInfo& c : cpus) {
        auto known = std::find_if(out.begin(), out.end(),
                                  [&](const Siblings& s) { return contains(s.cpus, c.system_id); });
        if (known != out.end()) {
            out.push_back({c.system_id, known->cpus});
            continue;
        }
        Siblings s{c.system_id, {}};
        std::string list, why;
        if (!read_line(sys + "/cpu" + std::to_string(c.system_id) +
                           "/topology/thread_siblings_list",
                       list) ||
            !parse_cpu_list(list, s.cpus, why) || !contains(s.cpus, c.system_id))
            s.cpus = {c.system_id};
        out.push_back(std::move(s));
    }
    return out;
}

// Sets each CPU's core to its core's system id as nOS-V defines it: the
// first of its thread siblings among `cpus` (the kernel's core_id repeats
// across packages). `siblings` holds at least every CPU of `cpus`.
void assign_cores(std::vector<CpuInfo>& cpus, const std::vector<Siblings>& siblings) {
    std::vector<int> kept;
    for (const CpuInfo& c : cpus)
        kept.push_back(c.system_id);
    for (CpuInfo& c : cpus) {
        auto it = std::lower_bound(siblings.begin(), siblings.end(), c.system_id,
                                   [](const Siblings& s, int id) { return s.id < id; });
        c.core = c.system_id;
        if (it == siblings.end() || it->id != c.system_id) continue;
        for (int sibling : it->cpus)
            if (contains(kept, sibling)) {
                c.core = sibling; // siblings are sorted: the first kept one
                break;
            }
    }
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
        if (end == text.c_str() + pos || errno || lo < 0 || lo >= kCpuIds) return bad();
        long hi = lo;
        pos = size_t(end - text.c_str());
        if (pos < text.size() && text[pos] == '-') {
            hi = std::strtol(text.c_str() + pos + 1, &end, 10);
            if (end == text.c_str() + pos + 1 || hi < lo || hi >= kCpuIds) return bad();
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
                   const CgroupLimits& limits, const std::string& sysfs_cpu) {
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
    std::vector<int> online;
    if (!online_cpus(sysfs_cpu, online, error)) return false;
    const bool numa = ::numa_available() >= 0; // else every CPU is on node 0
    for (int id : online) {
        // The affinity mask and the cpuset may name CPUs that are offline.
        const bool wanted = ids.empty() ? binding == "all" : contains(ids, id);
        if (!wanted || (cpuset && !contains(limits.cpuset, id))) continue;
        const int node = numa ? ::numa_node_of_cpu(id) : 0;
        out.cpus.push_back({id, id, node < 0 ? 0 : node});
    }
    const std::vector<Siblings> siblings = read_siblings(sysfs_cpu, out.cpus);
    assign_cores(out.cpus, siblings);
    if (binding != "all" && binding != "inherit") {
        for (int id : ids)
            if (!contains(online, id)) {
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
        if (limits.quota_cpus < int(out.cpus.size())) {
            keep_spread(out.cpus, limits.quota_cpus);
            assign_cores(out.cpus, siblings); // a core's first sibling may be gone
        }
        out.quota_cpus = limits.quota_cpus;
        out.quota_origin = limits.quota_source;
    }
    // Said, never cut short: the CPUs past the segment's last slot would
    // be left out without a word.
    if (out.cpus.size() > size_t(shm::kMaxCpus)) {
        std::vector<int> first;
        for (size_t i = 0; i < size_t(shm::kMaxCpus); ++i)
            first.push_back(out.cpus[i].system_id);
        error = std::to_string(out.cpus.size()) + " CPUs to manage (" + out.origin +
                "), more than the " + std::to_string(shm::kMaxCpus) +
                " one coexec instance manages; set topology.binding to at most " +
                std::to_string(shm::kMaxCpus) + " of them (the first " +
                std::to_string(shm::kMaxCpus) + ": " + format_cpu_list(first) +
                "), or run one instance per NUMA node or socket";
        return false;
    }
    // Hosted threads are pinned through a CpuMask of that many ids.
    for (const CpuInfo& c : out.cpus)
        if (c.system_id >= shm::kMaxCpus) {
            error = "CPU " + std::to_string(c.system_id) + " (" + out.origin +
                    ") has an id past the " + std::to_string(shm::kMaxCpus) +
                    " coexec can pin threads to; set topology.binding to CPUs below it";
            return false;
        }
    return true;
}

OwnPlacement read_own_placement() {
    OwnPlacement own;
    CpuMask mask;
    if (mask.read_own())
        for (int i = 0; i < CpuMask::kIds; ++i)
            if (mask.test(i)) own.cpus.push_back(i);
    // The memory policy of the calling thread: only a bind or a preference
    // names nodes (the default and local policies name none; interleaving
    // names several, which no one node fits).
    int mode = 0;
    unsigned long nodes[kMaxNodeWords] = {};
    if (::get_mempolicy(&mode, nodes, kMaxNodeWords * 64, nullptr, 0) == 0 &&
        (mode == MPOL_BIND || mode == MPOL_PREFERRED))
        for (int n = 0; n < kMaxNodeWords * 64; ++n)
            if ((nodes[n / 64] >> (n % 64)) & 1) own.memory_nodes.push_back(n);
    return own;
}

int32_t home_numa_node(const shm::Segment& s, const OwnPlacement& own) {
    const int32_t cpus = std::clamp(s.header.cpu_count, 0, s.header.max_cpus);
    if (s.header.numa_count < 2) return shm::kNone;
    // The node of each managed CPU in the affinity mask: one node, or none.
    int32_t node = shm::kNone;
    bool one = true;
    for (int32_t c = 0; c < cpus; ++c) {
        if (!std::binary_search(own.cpus.begin(), own.cpus.end(), s.cpus[c].system_id)) continue;
        if (node == shm::kNone)
            node = s.cpus[c].numa;
        else if (node != s.cpus[c].numa)
            one = false;
    }
    if (node != shm::kNone && one) return node;
    // Else the memory policy's node, if it names exactly one the segment has.
    if (own.memory_nodes.size() != 1) return shm::kNone;
    for (int32_t c = 0; c < cpus; ++c)
        if (s.cpus[c].system_numa == own.memory_nodes.front()) return s.cpus[c].numa;
    return shm::kNone;
}

} // namespace coexec::scheduler
