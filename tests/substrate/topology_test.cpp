// CPU lists, cgroup limits and CPU discovery (checked against hwloc).
#include "scheduler/shared_scheduler.hpp"
#include "scheduler/topology.hpp"
#include "shm/layout.hpp"
#include "shm/segment.hpp"

#include <gtest/gtest.h>
#include <hwloc.h>

#include <filesystem>
#include <fstream>
#include <sched.h>
#include <thread>
#include <unistd.h>

using namespace coexec::scheduler;
namespace shm = coexec::shm;

TEST(CpuList, ParsesRangesAndSingles) {
    std::vector<int> ids;
    std::string err;
    ASSERT_TRUE(parse_cpu_list("0-2,5,3", ids, err)) << err;
    EXPECT_EQ(ids, (std::vector<int>{0, 1, 2, 3, 5}));
    ASSERT_TRUE(parse_cpu_list("7", ids, err));
    EXPECT_EQ(ids, (std::vector<int>{7}));
}

TEST(CpuList, RejectsMalformedLists) {
    std::vector<int> ids;
    for (const char* bad : {"", "a", "1-", "3-1", "1,,2", "1,", "-1", "99999"}) {
        std::string err;
        EXPECT_FALSE(parse_cpu_list(bad, ids, err)) << bad;
        EXPECT_FALSE(err.empty());
    }
}

TEST(Topology, AllMatchesOnlineCpus) {
    Discovery d;
    std::string err;
    ASSERT_TRUE(discover_cpus("all", d, err, {})) << err;
    EXPECT_EQ(d.cpus.size(), size_t(std::thread::hardware_concurrency()));
    for (size_t i = 1; i < d.cpus.size(); ++i)
        EXPECT_LT(d.cpus[i - 1].system_id, d.cpus[i].system_id);
}

// Every online CPU has the core and NUMA node that hwloc sees: its core's
// first CPU (nOS-V's core system id) and its node's os_index, which
// nosv_get_current_system_domain() reports. coexec reads them from sysfs and
// libnuma, without hwloc's plugins.
TEST(Topology, CoresAndNodesMatchHwloc) {
    Discovery d;
    std::string err;
    ASSERT_TRUE(discover_cpus("all", d, err, {})) << err;
    hwloc_topology_t t = nullptr;
    ASSERT_EQ(hwloc_topology_init(&t), 0);
    ASSERT_EQ(hwloc_topology_load(t), 0);
    for (const CpuInfo& c : d.cpus) {
        hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(t, unsigned(c.system_id));
        ASSERT_NE(pu, nullptr) << "cpu " << c.system_id;
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
        EXPECT_EQ(c.core, core ? hwloc_bitmap_first(core->cpuset) : c.system_id)
            << "cpu " << c.system_id;
        hwloc_obj_t node = nullptr;
        int numa = -1;
        while ((node = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, node)))
            if (hwloc_bitmap_isset(node->cpuset, unsigned(c.system_id))) numa = int(node->os_index);
        EXPECT_EQ(c.system_numa, numa) << "cpu " << c.system_id;
    }
    hwloc_topology_destroy(t);
}

TEST(Topology, BindingRestrictsAndRejectsOfflineCpus) {
    Discovery d;
    std::string err;
    ASSERT_TRUE(discover_cpus("0", d, err)) << err;
    ASSERT_EQ(d.cpus.size(), 1u);
    EXPECT_EQ(d.cpus[0].system_id, 0);
    EXPECT_FALSE(discover_cpus("4000", d, err, {}));
    EXPECT_NE(err.find("not online"), std::string::npos);
    ASSERT_TRUE(discover_cpus("inherit", d, err)) << err;
    EXPECT_GE(d.cpus.size(), 1u);
}

TEST(CpuList, FormatsWhatItParses) {
    EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 5, 7, 8}), "0-3,5,7-8");
    EXPECT_EQ(format_cpu_list({4}), "4");
    EXPECT_EQ(format_cpu_list({}), "");
    std::vector<int> ids;
    std::string err;
    ASSERT_TRUE(parse_cpu_list(format_cpu_list({0, 2, 3, 4, 9}), ids, err)) << err;
    EXPECT_EQ(ids, (std::vector<int>{0, 2, 3, 4, 9}));
}

// ---- cgroup limits, read from fake trees -------------------------------------

namespace {

namespace fs = std::filesystem;

// A directory tree standing in for / (/proc/self/{cgroup,mountinfo} and the
// cgroup files they lead to) or for sysfs's devices/system/cpu. Removed on
// destruction.
class FakeRoot {
  public:
    FakeRoot()
        : dir_(fs::temp_directory_path() /
               ("coexec-fake-" + std::to_string(getpid()) + "-" + std::to_string(count_++))) {
        fs::remove_all(dir_);
    }
    ~FakeRoot() { fs::remove_all(dir_); }
    std::string path() const { return dir_.string(); }
    void write(const std::string& file, const std::string& text) const {
        const fs::path p = dir_ / file.substr(1);
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }

  private:
    static inline int count_ = 0;
    fs::path dir_;
};

constexpr const char* kV1MountInfo =
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n";

} // namespace

TEST(CgroupLimits, NoCgroupFileSystemMeansNoLimit) {
    FakeRoot root;
    root.write("/proc/self/cgroup", "0::/\n");
    const CgroupLimits l = read_cgroup_limits(root.path());
    EXPECT_TRUE(l.cpuset.empty());
    EXPECT_EQ(l.quota_cpus, 0);
}

TEST(CgroupLimits, V1QuotaRoundsUpAndTheTightestAncestorWins) {
    FakeRoot root;
    root.write("/proc/self/cgroup", "4:cpu,cpuacct:/job/step\n3:cpuset:/job\n");
    root.write("/proc/self/mountinfo", kV1MountInfo);
    const std::string cpu = "/sys/fs/cgroup/cpu,cpuacct";
    root.write(cpu + "/cpu.cfs_quota_us", "-1\n");
    root.write(cpu + "/cpu.cfs_period_us", "100000\n");
    root.write(cpu + "/job/cpu.cfs_quota_us", "250000\n"); // 2.5 CPUs: 3
    root.write(cpu + "/job/cpu.cfs_period_us", "100000\n");
    root.write(cpu + "/job/step/cpu.cfs_quota_us", "-1\n"); // unlimited, but its parent is not
    root.write(cpu + "/job/step/cpu.cfs_period_us", "100000\n");
    root.write("/sys/fs/cgroup/cpuset/job/cpuset.effective_cpus", "2-5,8\n");
    const CgroupLimits l = read_cgroup_limits(root.path());
    EXPECT_EQ(l.quota_cpus, 3);
    EXPECT_NE(l.quota_source.find("cgroup v1 " + cpu + "/job: cpu.cfs_quota_us 250000"),
              std::string::npos)
        << l.quota_source;
    EXPECT_EQ(l.cpuset, (std::vector<int>{2, 3, 4, 5, 8}));
    EXPECT_EQ(l.cpuset_file, "/sys/fs/cgroup/cpuset/job/cpuset.effective_cpus");

    root.write(cpu + "/job/step/cpu.cfs_quota_us", "50000\n"); // half a CPU binds tighter
    EXPECT_EQ(read_cgroup_limits(root.path()).quota_cpus, 1);
}

TEST(CgroupLimits, V2ReadsCpuMaxAndTheEffectiveCpuset) {
    FakeRoot root;
    root.write("/proc/self/cgroup", "0::/box\n");
    root.write("/proc/self/mountinfo",
               "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
    root.write("/sys/fs/cgroup/box/cpu.max", "max 100000\n");
    root.write("/sys/fs/cgroup/box/cpuset.cpus.effective", "0-1\n");
    CgroupLimits l = read_cgroup_limits(root.path());
    EXPECT_EQ(l.quota_cpus, 0);
    EXPECT_EQ(l.cpuset, (std::vector<int>{0, 1}));

    root.write("/sys/fs/cgroup/box/cpu.max", "150000 100000\n");
    l = read_cgroup_limits(root.path());
    EXPECT_EQ(l.quota_cpus, 2);
    EXPECT_EQ(l.quota_source, "cgroup v2 /sys/fs/cgroup/box: cpu.max 150000 100000");
}

TEST(CgroupLimits, AContainersMountRootIsStrippedFromItsCgroupPath) {
    FakeRoot root;
    // Inside a container without a cgroup namespace: the hierarchy is
    // mounted from the container's own cgroup.
    root.write("/proc/self/cgroup", "4:cpu:/docker/abc\n");
    root.write("/proc/self/mountinfo",
               "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu\n");
    root.write("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "100000\n");
    root.write("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    EXPECT_EQ(read_cgroup_limits(root.path()).quota_cpus, 1);
}

// ---- discovery under limits ---------------------------------------------------

TEST(Topology, TheCpusetBoundsAllAndRejectsListsOutsideIt) {
    Discovery d;
    std::string err;
    ASSERT_TRUE(discover_cpus("all", d, err, {})) << err;
    const int online = int(d.cpus.size());
    if (online < 2) GTEST_SKIP() << "needs 2 online CPUs";
    const int last = d.cpus.back().system_id;
    CgroupLimits limits;
    limits.cpuset = {last};
    limits.cpuset_file = "/fake/cpuset.effective_cpus";
    ASSERT_TRUE(discover_cpus("all", d, err, limits)) << err;
    ASSERT_EQ(d.cpus.size(), 1u);
    EXPECT_EQ(d.cpus[0].system_id, last);
    EXPECT_NE(d.origin.find("cgroup cpuset " + std::to_string(last)), std::string::npos)
        << d.origin;
    EXPECT_FALSE(discover_cpus("0", d, err, limits));
    EXPECT_NE(err.find("excludes"), std::string::npos) << err;
}

TEST(Topology, AQuotaKeepsThatManyCpusOnePerCoreFirst) {
    Discovery d;
    std::string err;
    ASSERT_TRUE(discover_cpus("all", d, err, {})) << err;
    if (d.cpus.size() < 2) GTEST_SKIP() << "needs 2 online CPUs";
    const size_t online = d.cpus.size();
    CgroupLimits limits;
    limits.quota_cpus = 1;
    limits.quota_source = "fake quota";
    ASSERT_TRUE(discover_cpus("all", d, err, limits)) << err;
    ASSERT_EQ(d.cpus.size(), 1u);
    EXPECT_EQ(d.quota_cpus, 1);
    EXPECT_EQ(d.quota_origin, "fake quota");

    limits.quota_cpus = int(online) + 3; // more than the machine: nothing is cut
    ASSERT_TRUE(discover_cpus("all", d, err, limits)) << err;
    EXPECT_EQ(d.cpus.size(), online);
    EXPECT_EQ(d.quota_cpus, int(online) + 3);
}

TEST(Topology, InheritFollowsTheAffinityMask) {
    cpu_set_t saved;
    ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
    if (CPU_COUNT(&saved) < 2) GTEST_SKIP() << "needs 2 CPUs in the affinity mask";
    int first = 0;
    while (!CPU_ISSET(first, &saved))
        ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    Discovery d;
    std::string err;
    const bool ok = discover_cpus("inherit", d, err, {});
    ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
    ASSERT_TRUE(ok) << err;
    ASSERT_EQ(d.cpus.size(), 1u);
    EXPECT_EQ(d.cpus[0].system_id, first);
    EXPECT_NE(d.origin.find("affinity mask " + std::to_string(first)), std::string::npos);
}

// A fake sysfs of two packages with two cores of two threads each, numbered
// as Intel machines number them (a core's threads are N and N+2 within a
// package). The kernel's core_id repeats across packages (0, 1, 0, 1); a
// core is named by its first thread, as in nOS-V, so a quota of 4 CPUs gets
// one thread of each of the 4 cores, and a binding to both threads of one
// core names that core by its first managed thread.
TEST(Topology, CoresAreNamedByTheirFirstThreadAcrossPackages) {
    FakeRoot sys;
    sys.write("/online", "0-7\n");
    const int core_id[] = {0, 1, 0, 1, 0, 1, 0, 1};
    const char* siblings[] = {"0,2", "1,3", "0,2", "1,3", "4,6", "5,7", "4,6", "5,7"};
    for (int cpu = 0; cpu < 8; ++cpu) {
        const std::string dir = "/cpu" + std::to_string(cpu) + "/topology/";
        sys.write(dir + "core_id", std::to_string(core_id[cpu]) + "\n");
        sys.write(dir + "thread_siblings_list", std::string(siblings[cpu]) + "\n");
    }
    Discovery d;
    std::string err;
    ASSERT_TRUE(discover_cpus("all", d, err, {}, sys.path())) << err;
    std::vector<int> cores;
    for (const CpuInfo& c : d.cpus)
        cores.push_back(c.core);
    EXPECT_EQ(cores, (std::vector<int>{0, 1, 0, 1, 4, 5, 4, 5}));

    CgroupLimits limits;
    limits.quota_cpus = 4;
    limits.quota_source = "fake quota";
    ASSERT_TRUE(discover_cpus("all", d, err, limits, sys.path())) << err;
    std::vector<int> kept;
    for (const CpuInfo& c : d.cpus)
        kept.push_back(c.system_id);
    EXPECT_EQ(kept, (std::vector<int>{0, 1, 4, 5})) << "one thread of each core first";

    ASSERT_TRUE(discover_cpus("2,6", d, err, {}, sys.path())) << err;
    ASSERT_EQ(d.cpus.size(), 2u);
    EXPECT_EQ(d.cpus[0].core, 2) << "CPU 0 is not managed: its sibling 2 names the core";
    EXPECT_EQ(d.cpus[1].core, 6);

    // A sysfs without siblings: each CPU is its own core.
    FakeRoot bare;
    bare.write("/online", "0-1\n");
    ASSERT_TRUE(discover_cpus("all", d, err, {}, bare.path())) << err;
    ASSERT_EQ(d.cpus.size(), 2u);
    EXPECT_EQ(d.cpus[1].core, 1);
}

// More CPUs than a segment has slots for is an error that says what to do,
// never a silent cut (a 768-thread node, say); a binding or a CPU quota that
// keeps few enough is fine.
TEST(Topology, MoreCpusThanASegmentHoldsIsAnError) {
    const int n = shm::kMaxCpus + 44;
    FakeRoot sys;
    sys.write("/online", "0-" + std::to_string(n - 1) + "\n");
    Discovery d;
    std::string err;
    EXPECT_FALSE(discover_cpus("all", d, err, {}, sys.path()));
    EXPECT_NE(err.find(std::to_string(n) + " CPUs to manage"), std::string::npos) << err;
    EXPECT_NE(err.find("0-" + std::to_string(shm::kMaxCpus - 1)), std::string::npos) << err;

    const std::string first = "0-" + std::to_string(shm::kMaxCpus - 1);
    ASSERT_TRUE(discover_cpus(first, d, err, {}, sys.path())) << err;
    EXPECT_EQ(d.cpus.size(), size_t(shm::kMaxCpus));

    CgroupLimits limits;
    limits.quota_cpus = 8;
    limits.quota_source = "fake quota";
    ASSERT_TRUE(discover_cpus("all", d, err, limits, sys.path())) << err;
    EXPECT_EQ(d.cpus.size(), 8u);
}

// The home NUMA node a process names: its affinity's node when every
// managed CPU in it is on one node, else its memory policy's one node.
TEST(Topology, AHomeNodeComesFromTheAffinityElseTheMemoryPolicy) {
    shm::SegmentOptions o;
    o.isolation = shm::Isolation::Process;
    o.cpu_slots = 4;
    o.initialize = [](shm::Segment& s) {
        Discovery two_nodes; // system nodes 4 and 6: logical 0 and 1
        two_nodes.cpus = {{10, 10, 4}, {11, 11, 4}, {12, 12, 6}, {13, 13, 6}};
        SharedScheduler(s).format_unpublished(two_nodes, shm::SegmentConfig{});
    };
    shm::SegmentError e;
    shm::SegmentMapping map = shm::SegmentMapping::open(o, e);
    ASSERT_TRUE(map) << e.message;
    const shm::Segment& s = *map.get();
    EXPECT_EQ(home_numa_node(s, {{12, 13, 99}, {}}), 1);          // CPU 99 is not managed
    EXPECT_EQ(home_numa_node(s, {{10}, {6}}), 0);                 // the affinity wins
    EXPECT_EQ(home_numa_node(s, {{11, 12}, {6}}), 1);             // two nodes: the memory's
    EXPECT_EQ(home_numa_node(s, {{11, 12}, {4, 6}}), shm::kNone); // interleaved
    EXPECT_EQ(home_numa_node(s, {{10, 11, 12, 13}, {}}), shm::kNone);
    EXPECT_EQ(home_numa_node(s, {{}, {5}}), shm::kNone); // a node the segment lacks
    // A process's own placement, as read: some CPU, and memory on no one node
    // unless a policy says so.
    const OwnPlacement own = read_own_placement();
    EXPECT_FALSE(own.cpus.empty());
}
