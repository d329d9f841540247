#include "topology.hpp"

#include "scheduler/kernel_affinity.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <hwloc.h>
#include <memory>
#include <sched.h>

namespace coexec::scheduler {
namespace {

struct TopologyDeleter {
    void operator()(hwloc_topology_t t) const { hwloc_topology_destroy(t); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

Topology load_topology() {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0) return nullptr;
    if (hwloc_topology_load(t) != 0) {
        hwloc_topology_destroy(t);
        return nullptr;
    }
    return Topology(t);
}

int ancestor_index(hwloc_topology_t t, hwloc_obj_t pu, hwloc_obj_type_t type) {
    hwloc_obj_t o = hwloc_get_ancestor_obj_by_type(t, type, pu);
    return o ? int(o->os_index) : -1;
}

int numa_of(hwloc_topology_t t, hwloc_obj_t pu) {
    // NUMA nodes are memory children in hwloc 2: find the one whose cpuset
    // holds this PU.
    hwloc_obj_t node = nullptr;
    while ((node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, node)))
        if (node->cpuset && hwloc_bitmap_isset(node->cpuset, pu->os_index))
            return int(node->os_index);
    return 0;
}

bool wanted_ids(const std::string& binding, std::vector<int>& ids, std::string& error) {
    if (binding == "all") return true; // empty means every PU
    if (binding == "inherit") {
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
    return parse_cpu_list(binding, ids, error);
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

bool discover_cpus(const std::string& binding, std::vector<CpuInfo>& out, std::string& error) {
    out.clear();
    std::vector<int> ids;
    if (!wanted_ids(binding, ids, error)) return false;
    Topology topo = load_topology();
    if (!topo) {
        error = "hwloc could not load the machine topology";
        return false;
    }
    hwloc_topology_t t = topo.get();
    std::vector<CpuInfo> all;
    hwloc_obj_t pu = nullptr;
    while ((pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu))) {
        int core = ancestor_index(t, pu, HWLOC_OBJ_CORE);
        all.push_back({int(pu->os_index), core < 0 ? int(pu->os_index) : core, numa_of(t, pu)});
    }
    std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.system_id < b.system_id; });
    if (ids.empty()) {
        out = all;
    } else {
        for (int id : ids) {
            auto it =
                std::find_if(all.begin(), all.end(), [&](auto& c) { return c.system_id == id; });
            if (it == all.end()) {
                error =
                    "topology.binding names CPU " + std::to_string(id) + ", which is not online";
                return false;
            }
            out.push_back(*it);
        }
    }
    if (out.empty()) {
        error = "no CPU to manage";
        return false;
    }
    return true;
}

} // namespace coexec::scheduler
