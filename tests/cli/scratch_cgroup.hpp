// Real cgroups, v1 or v2, made for one test and removed after it.
#pragma once

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::clitest {

enum class CgroupVersion { v1, v2 };

// The whole cgroup v2 hierarchy mounted read-write in a mount namespace of
// its own, for where ours is mounted read-only (a container's
// /sys/fs/cgroup, systemd's ProtectControlGroups=). A child process
// unshares its mount namespace, mounts cgroup2 on a private directory and
// waits; this process reaches the mount through /proc/<child>/root. The
// child takes no cgroup namespace of its own: that would root the mount at
// our own cgroup, which holds processes, and by cgroup v2's
// no-internal-processes rule a child of such a cgroup (unless it is the
// root) holds processes only as a threaded cgroup.
class PrivateCgroup2Mount {
  public:
    PrivateCgroup2Mount();
    ~PrivateCgroup2Mount();
    PrivateCgroup2Mount(const PrivateCgroup2Mount&) = delete;
    PrivateCgroup2Mount& operator=(const PrivateCgroup2Mount&) = delete;

    // Empty once mounted; otherwise why not.
    const std::string& failure() const { return why_; }
    // Where this process reaches the root of the mount, which is the root
    // of our cgroup namespace.
    std::string top() const;

  private:
    std::string dir_; // the mount point in the child's namespace
    pid_t pid_ = -1;
    int hold_ = -1; // closing it lets the child exit
    std::string why_;
};

// A cgroup in which `controller` ("cpu" or "cpuset") applies, made in the
// hierarchy that coexec reads: for v1, the first mount of that
// controller's hierarchy in /proc/self/mountinfo; for v2, the first cgroup2
// mount. It is a child of the cgroup mounted there (on a host, the root
// cgroup). For v2 that cgroup must be the root cgroup or hold no processes
// (a container's cgroup holds its processes unless they were moved to a
// leaf); the controller is enabled in its cgroup.subtree_control if it is
// not yet, and left enabled (concurrent tests may rely on it); where the
// mount is read-only a private one is used (PrivateCgroup2Mount).
//
// Its processes must be killed and reaped before it is destroyed: a
// cgroup with live processes cannot be removed.
class ScratchCgroup {
  public:
    ScratchCgroup(CgroupVersion version, const std::string& controller, const std::string& name);
    ~ScratchCgroup();
    ScratchCgroup(const ScratchCgroup&) = delete;
    ScratchCgroup& operator=(const ScratchCgroup&) = delete;

    // Empty when the cgroup exists; otherwise exactly why it could not be made.
    const std::string& unavailable() const { return why_; }
    // Its directory under the mount point that its processes see: the
    // name coexec reports.
    const std::string& dir() const { return dir_; }
    // Writes `value` to the cgroup's `file`: empty once done, else why not.
    std::string set(const std::string& file, const std::string& value) const;
    // argv that moves itself into this cgroup, then execs `argv`.
    std::vector<std::string> join_then(const std::vector<std::string>& argv) const;

  private:
    void make_v1(const std::string& controller, const std::string& name);
    void make_v2(const std::string& controller, const std::string& name);

    std::string dir_;
    std::string path_; // where this process reaches it: dir_, or through a private mount
    bool made_ = false;
    std::string why_;
    std::unique_ptr<PrivateCgroup2Mount> private_;
};

} // namespace coexec::clitest
