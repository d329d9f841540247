#include "cgroup_limits.hpp"

#include "read_line.hpp"
#include "topology.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace coexec::scheduler {
namespace {

// One hierarchy the process belongs to: where it is mounted and the
// process's cgroup directory in it.
struct Hierarchy {
    bool v2 = false;
    std::string mount; // mount point, e.g. /sys/fs/cgroup/cpu
    std::string dir;   // the process's cgroup directory under it
};

bool has_word(const std::string& list, const std::string& word) {
    std::stringstream ss(list);
    for (std::string w; std::getline(ss, w, ',');)
        if (w == word) return true;
    return false;
}

// The process's cgroup path in the v1 hierarchy that has `controller`, or in
// the v2 hierarchy when `controller` is empty ("0::/path").
bool cgroup_path(const std::string& root, const std::string& controller, std::string& path) {
    std::ifstream in(root + "/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
        if (b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1);
        if (controller.empty() ? controllers.empty() : has_word(controllers, controller)) {
            path = line.substr(b + 1);
            return true;
        }
    }
    return false;
}

// The mount point and mount root of that hierarchy, from mountinfo: fields
// "id parent dev root mountpoint options [optional...] - fstype source super".
bool mount_of(const std::string& root, const std::string& controller, std::string& mount_root,
              std::string& mount_point) {
    std::ifstream in(root + "/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, dev, fs_root, point, word, fstype, source, super;
        fields >> id >> parent >> dev >> fs_root >> point;
        while (fields >> word && word != "-") {
        }
        fields >> fstype >> source >> super;
        const bool match = controller.empty() ? fstype == "cgroup2"
                                              : fstype == "cgroup" && has_word(super, controller);
        if (match) {
            mount_root = fs_root;
            mount_point = point;
            return true;
        }
    }
    return false;
}

bool hierarchy(const std::string& root, const std::string& controller, Hierarchy& h) {
    std::string path, mount_root;
    if (!cgroup_path(root, controller, path) || !mount_of(root, controller, mount_root, h.mount))
        return false;
    h.v2 = controller.empty();
    // In a container the mount's root may be the container's own cgroup,
    // which /proc/self/cgroup names from the real root.
    if (mount_root != "/" && path.compare(0, mount_root.size(), mount_root) == 0)
        path = path.substr(mount_root.size());
    if (path == "/") path.clear();
    h.dir = h.mount + path;
    return true;
}

// ceil(quota / period) from one cgroup directory, or 0 when it sets none.
int quota_in(const Hierarchy& h, const std::string& root, std::string& source) {
    long long quota = -1, period = 0;
    std::string text;
    if (h.v2) {
        if (!read_line(root + h.dir + "/cpu.max", text)) return 0;
        std::istringstream in(text);
        std::string q;
        in >> q >> period;
        if (q == "max" || !in) return 0;
        quota = std::atoll(q.c_str());
        source = "cgroup v2 " + h.dir + ": cpu.max " + text;
    } else {
        std::string p;
        if (!read_line(root + h.dir + "/cpu.cfs_quota_us", text) ||
            !read_line(root + h.dir + "/cpu.cfs_period_us", p))
            return 0;
        quota = std::atoll(text.c_str());
        period = std::atoll(p.c_str());
        source = "cgroup v1 " + h.dir + ": cpu.cfs_quota_us " + text + ", cpu.cfs_period_us " + p;
    }
    if (quota <= 0 || period <= 0) return 0;
    return int((quota + period - 1) / period);
}

void read_quota(const std::string& root, CgroupLimits& out) {
    Hierarchy h;
    if (!hierarchy(root, "cpu", h) && !hierarchy(root, "", h)) return;
    // Every ancestor's quota binds too: take the tightest.
    for (std::string dir = h.dir;; dir = dir.substr(0, dir.rfind('/'))) {
        Hierarchy at = h;
        at.dir = dir;
        std::string source;
        const int cpus = quota_in(at, root, source);
        if (cpus > 0 && (out.quota_cpus == 0 || cpus < out.quota_cpus)) {
            out.quota_cpus = cpus;
            out.quota_source = source;
        }
        if (dir.size() <= h.mount.size() || dir.rfind('/') == std::string::npos) break;
    }
}

void read_cpuset(const std::string& root, CgroupLimits& out) {
    Hierarchy h;
    std::string file;
    if (hierarchy(root, "cpuset", h))
        file = h.dir + "/cpuset.effective_cpus";
    else if (hierarchy(root, "", h))
        file = h.dir + "/cpuset.cpus.effective";
    else
        return;
    std::string text, error;
    std::vector<int> ids;
    if (!read_line(root + file, text) || !parse_cpu_list(text, ids, error)) return;
    out.cpuset = std::move(ids);
    out.cpuset_file = file;
}

} // namespace

CgroupLimits read_cgroup_limits(const std::string& root) {
    CgroupLimits out;
    read_cpuset(root, out);
    read_quota(root, out);
    return out;
}

} // namespace coexec::scheduler
