// CPU lists and hwloc discovery.
#include "scheduler/topology.hpp"

#include <gtest/gtest.h>

#include <thread>

using namespace coexec::scheduler;

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
    std::vector<CpuInfo> cpus;
    std::string err;
    ASSERT_TRUE(discover_cpus("all", cpus, err)) << err;
    EXPECT_EQ(cpus.size(), size_t(std::thread::hardware_concurrency()));
    for (size_t i = 1; i < cpus.size(); ++i) EXPECT_LT(cpus[i - 1].system_id, cpus[i].system_id);
}

TEST(Topology, BindingRestrictsAndRejectsOfflineCpus) {
    std::vector<CpuInfo> cpus;
    std::string err;
    ASSERT_TRUE(discover_cpus("0", cpus, err)) << err;
    ASSERT_EQ(cpus.size(), 1u);
    EXPECT_EQ(cpus[0].system_id, 0);
    EXPECT_FALSE(discover_cpus("4000", cpus, err));
    EXPECT_NE(err.find("not online"), std::string::npos);
    ASSERT_TRUE(discover_cpus("inherit", cpus, err)) << err;
    EXPECT_GE(cpus.size(), 1u);
}
