// nosv/hwinfo.h: topology of the CPUs this instance manages.
#include <nosv.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

using coexec::core::Runtime;
using coexec::core::this_thread_context;

namespace {

// The calling task's logical CPU, or a negative error.
int current_cpu() {
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    auto* self = this_thread_context();
    if (!self || !self->work.current || self->held.cpu < 0) return NOSV_ERR_OUTSIDE_TASK;
    return self->held.cpu;
}

// A copy the caller owns and releases with free(), as nOS-V documents;
// nullptr when memory runs out.
int* as_array(const std::vector<int>& v) {
    auto* out = static_cast<int*>(std::malloc(std::max<size_t>(v.size(), 1) * sizeof(int)));
    if (out) std::copy(v.begin(), v.end(), out);
    return out;
}

// System ids of the distinct cores, in CPU order.
std::vector<int> cores(const Runtime& rt) {
    std::vector<int> out;
    for (int c = 0; c < rt.membership().cpu_count(); ++c) {
        int core = rt.membership().segment().cpus[c].core;
        if (std::find(out.begin(), out.end(), core) == out.end()) out.push_back(core);
    }
    return out;
}

} // namespace

COEXEC_API int nosv_get_num_cpus(void) {
    Runtime* rt = Runtime::get();
    return rt ? rt->membership().cpu_count() : NOSV_ERR_NOT_INITIALIZED;
}

COEXEC_API int* nosv_get_available_cpus(void) {
    Runtime* rt = Runtime::get();
    return rt ? as_array(rt->membership().cpu_system_ids()) : nullptr;
}

COEXEC_API int nosv_get_current_logical_cpu(void) {
    return current_cpu();
}

COEXEC_API int nosv_get_current_system_cpu(void) {
    int c = current_cpu();
    return c < 0 ? c : Runtime::get()->membership().cpu_system_ids()[size_t(c)];
}

COEXEC_API int nosv_get_num_numa_nodes(void) {
    Runtime* rt = Runtime::get();
    return rt ? rt->membership().numa_count() : NOSV_ERR_NOT_INITIALIZED;
}

COEXEC_API int* nosv_get_available_numa_nodes(void) {
    Runtime* rt = Runtime::get();
    return rt ? as_array(rt->membership().numa_system_ids()) : nullptr;
}

COEXEC_API int nosv_get_current_logical_numa_node(void) {
    int c = current_cpu();
    return c < 0 ? c : Runtime::get()->membership().numa_of_cpu(c);
}

COEXEC_API int nosv_get_current_system_numa_node(void) {
    int c = current_cpu();
    return c < 0 ? c : Runtime::get()->membership().segment().cpus[c].system_numa;
}

COEXEC_API int nosv_get_system_numa_id(int logical) {
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (logical < 0 || logical >= rt->membership().numa_count()) return NOSV_ERR_INVALID_PARAMETER;
    return rt->membership().numa_system_ids()[size_t(logical)];
}

COEXEC_API int nosv_get_logical_numa_id(int system) {
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    int l = rt->membership().logical_numa(system);
    return l < 0 ? NOSV_ERR_INVALID_PARAMETER : l;
}

COEXEC_API int nosv_get_num_cpus_in_numa(int system) {
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (rt->membership().logical_numa(system) < 0) return NOSV_ERR_INVALID_PARAMETER;
    int n = 0;
    for (int c = 0; c < rt->membership().cpu_count(); ++c)
        n += rt->membership().segment().cpus[c].system_numa == system;
    return n;
}

COEXEC_API int nosv_get_num_domains(nosv_topo_level_t level) {
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    switch (level) {
    case NOSV_TOPO_LEVEL_NODE:
        return 1;
    case NOSV_TOPO_LEVEL_NUMA:
        return rt->membership().numa_count();
    case NOSV_TOPO_LEVEL_COMPLEX_SET:
        return rt->membership().numa_count(); // one set per NUMA node
    case NOSV_TOPO_LEVEL_CORE:
        return int(cores(*rt).size());
    case NOSV_TOPO_LEVEL_CPU:
        return rt->membership().cpu_count();
    default:
        return NOSV_ERR_INVALID_PARAMETER;
    }
}

COEXEC_API int* nosv_get_available_domains(nosv_topo_level_t level) {
    Runtime* rt = Runtime::get();
    if (!rt) return nullptr;
    switch (level) {
    case NOSV_TOPO_LEVEL_NODE:
        return as_array({0});
    case NOSV_TOPO_LEVEL_NUMA:
    case NOSV_TOPO_LEVEL_COMPLEX_SET:
        return as_array(rt->membership().numa_system_ids());
    case NOSV_TOPO_LEVEL_CORE:
        return as_array(cores(*rt));
    case NOSV_TOPO_LEVEL_CPU:
        return as_array(rt->membership().cpu_system_ids());
    default:
        return nullptr;
    }
}

COEXEC_API int nosv_get_current_logical_domain(nosv_topo_level_t level) {
    int c = current_cpu();
    if (c < 0) return c;
    Runtime* rt = Runtime::get();
    switch (level) {
    case NOSV_TOPO_LEVEL_NODE:
        return 0;
    case NOSV_TOPO_LEVEL_NUMA:
    case NOSV_TOPO_LEVEL_COMPLEX_SET:
        return rt->membership().numa_of_cpu(c);
    case NOSV_TOPO_LEVEL_CORE: {
        auto ids = cores(*rt);
        return int(std::find(ids.begin(), ids.end(), rt->membership().segment().cpus[c].core) -
                   ids.begin());
    }
    case NOSV_TOPO_LEVEL_CPU:
        return c;
    default:
        return NOSV_ERR_INVALID_PARAMETER;
    }
}

COEXEC_API int nosv_get_current_system_domain(nosv_topo_level_t level) {
    int c = current_cpu();
    if (c < 0) return c;
    const auto& slot = Runtime::get()->membership().segment().cpus[c];
    switch (level) {
    case NOSV_TOPO_LEVEL_NODE:
        return 0;
    case NOSV_TOPO_LEVEL_NUMA:
    case NOSV_TOPO_LEVEL_COMPLEX_SET:
        return slot.system_numa;
    case NOSV_TOPO_LEVEL_CORE:
        return slot.core;
    case NOSV_TOPO_LEVEL_CPU:
        return slot.system_id;
    default:
        return NOSV_ERR_INVALID_PARAMETER;
    }
}

COEXEC_API int nosv_get_num_cpus_in_domain(nosv_topo_level_t level, int sid) {
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    int n = 0;
    for (int c = 0; c < rt->membership().cpu_count(); ++c) {
        const auto& slot = rt->membership().segment().cpus[c];
        switch (level) {
        case NOSV_TOPO_LEVEL_NODE:
            n += sid == 0;
            break;
        case NOSV_TOPO_LEVEL_NUMA:
        case NOSV_TOPO_LEVEL_COMPLEX_SET:
            n += slot.system_numa == sid;
            break;
        case NOSV_TOPO_LEVEL_CORE:
            n += slot.core == sid;
            break;
        case NOSV_TOPO_LEVEL_CPU:
            n += slot.system_id == sid;
            break;
        default:
            return NOSV_ERR_INVALID_PARAMETER;
        }
    }
    return n ? n : NOSV_ERR_INVALID_PARAMETER;
}
