// The Slurm plugin's work for one node (job_node.hpp).
#include "job_node.hpp"

#include "scheduler/cgroup_limits.hpp"
#include "scheduler/topology.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <hwloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace coexec::slurm {
namespace {

// Every entry of `dir` whose name starts with `prefix` and that is a
// regular file.
std::vector<std::string> files_with_prefix(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> found;
    DIR* d = opendir(dir.c_str());
    if (!d) return found;
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.rfind(prefix, 0) != 0) continue;
        std::string path = dir + "/" + name;
        struct stat st {};
        if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) found.push_back(path);
    }
    closedir(d);
    std::sort(found.begin(), found.end());
    return found;
}

// The OS ids of the PUs of the cores with logical index in `cores`.
bool cores_to_cpus(const std::vector<int>& cores, std::vector<int>& cpus, std::string& error) {
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) != 0) {
        error = "hwloc cannot start";
        return false;
    }
    // Slurm counts every core of the node, also those outside our cgroup.
    hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    if (hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        error = "hwloc cannot read this node's topology";
        return false;
    }
    const int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    bool ok = true;
    for (int core : cores) {
        hwloc_obj_t obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, unsigned(core));
        if (!obj || !obj->cpuset) {
            error = "Slurm allocated core " + std::to_string(core) + ", and this node has " +
                    std::to_string(ncores) + " cores (slurm.conf must describe the node as " +
                    "`slurmd -C` does)";
            ok = false;
            break;
        }
        int pu = -1;
        while ((pu = hwloc_bitmap_next(obj->cpuset, pu)) != -1)
            cpus.push_back(pu);
    }
    hwloc_topology_destroy(topo);
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return ok;
}

} // namespace

std::string segment_name(uint32_t job_id) {
    return "slurm." + std::to_string(job_id);
}

std::string segment_name(uint32_t job_id, uint32_t step_id) {
    return segment_name(job_id) + "." + std::to_string(step_id);
}

bool job_cpus(const std::string& cores, std::vector<int>& cpus, std::string& error) {
    std::vector<int> core_ids;
    if (!scheduler::parse_cpu_list(cores, core_ids, error)) {
        error = "cannot read the allocated cores '" + cores + "': " + error;
        return false;
    }
    cpus.clear();
    if (!cores_to_cpus(core_ids, cpus, error)) return false;
    const scheduler::CgroupLimits limits = scheduler::read_cgroup_limits();
    if (!limits.cpuset.empty()) {
        std::vector<int> within;
        std::set_intersection(cpus.begin(), cpus.end(), limits.cpuset.begin(), limits.cpuset.end(),
                              std::back_inserter(within));
        if (within.empty()) {
            error = "the job's CPUs " + scheduler::format_cpu_list(cpus) +
                    " are all outside this task's cgroup cpuset " +
                    scheduler::format_cpu_list(limits.cpuset) + " (" + limits.cpuset_file + ")";
            return false;
        }
        cpus = std::move(within);
    }
    if (cpus.empty()) {
        error = "no CPU allocated on this node";
        return false;
    }
    return true;
}

std::vector<std::string> remove_segments(const std::string& name, std::vector<std::string>& errors,
                                         const std::string& dir) {
    std::vector<std::string> removed;
    // "coexec.slurm.12." matches slurm.12's segments and its steps'
    // (slurm.12.3), and never slurm.123's.
    for (const std::string& path : files_with_prefix(dir, "coexec." + name + ".")) {
        if (unlink(path.c_str()) == 0)
            removed.push_back(path);
        else if (errno != ENOENT)
            errors.push_back("cannot remove " + path + ": " + std::strerror(errno));
    }
    return removed;
}

std::vector<std::string> remove_openmp_registration(pid_t pid, const std::string& dir) {
    std::vector<std::string> removed;
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) return removed;
    for (const std::string& path :
         files_with_prefix(dir, "__KMP_REGISTERED_LIB_" + std::to_string(pid) + "_")) {
        if (unlink(path.c_str()) == 0) removed.push_back(path);
    }
    return removed;
}

} // namespace coexec::slurm
