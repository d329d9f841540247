// A container's CPU limits, read from the calling process's cgroups: the
// cpuset it may run on and the CPU quota it may use.
#pragma once

#include <string>
#include <vector>

namespace coexec::scheduler {

// What the cgroups of the calling process allow. Each part is empty (or 0)
// when no cgroup limits it, or when the cgroup file system cannot be read.
struct CgroupLimits {
    // The effective cpuset of the process's cgroup, as a sorted CPU list,
    // and the file it was read from.
    std::vector<int> cpuset;
    std::string cpuset_file;
    // ceil(quota / period) of the tightest CPU quota on the path from the
    // process's cgroup up to the hierarchy's root (a parent's quota binds its
    // children too), and where it came from, e.g.
    // "cgroup v1 /sys/fs/cgroup/cpu/job: cpu.cfs_quota_us 50000, cpu.cfs_period_us 100000".
    int quota_cpus = 0;
    std::string quota_source;
};

// Reads the limits of the calling process from /proc/self/cgroup,
// /proc/self/mountinfo and the cgroup files they lead to, for cgroup v1
// (cpu and cpuset controllers) and v2 (cpu.max, cpuset.cpus.effective).
// `root` prefixes every path read: tests point it at a fake tree.
CgroupLimits read_cgroup_limits(const std::string& root = "");

} // namespace coexec::scheduler
