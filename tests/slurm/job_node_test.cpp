// The Slurm plugin's work on a node, without Slurm (tools/slurm/job_node):
// segment names, the job's cores as CPUs, and which files it removes.
#include "tools/slurm/job_node.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace coexec::slurm;

// A scratch folder standing for /dev/shm, removed at the end.
class ShmDir : public ::testing::Test {
  protected:
    void SetUp() override {
        char dir[] = "/tmp/coexec-job-node-XXXXXX";
        ASSERT_NE(mkdtemp(dir), nullptr);
        dir_ = dir;
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    void touch(const std::string& name) const { std::ofstream(dir_ + "/" + name) << "x"; }
    std::set<std::string> names() const {
        std::set<std::string> found;
        for (const auto& e : fs::directory_iterator(dir_))
            found.insert(e.path().filename().string());
        return found;
    }
    std::string dir_;
};

TEST(JobNode, SegmentNamesAreTheJobsAndTheSteps) {
    EXPECT_EQ(segment_name(12), "slurm.12");
    EXPECT_EQ(segment_name(12, 3), "slurm.12.3");
}

TEST_F(ShmDir, AJobsSegmentsAndItsStepsAreRemovedAndNoOtherJobs) {
    for (const char* n : {"coexec.slurm.12.u0", "coexec.slurm.12.g100", "coexec.slurm.12.public",
                          "coexec.slurm.12.3.u0", "coexec.slurm.123.u0", "coexec.slurm.1.u0",
                          "coexec.slurm.123.12.u0", "coexec.coexec.u0", "slurm.12.u0"})
        touch(n);
    fs::create_directory(dir_ + "/coexec.slurm.12.dir");
    std::vector<std::string> errors;
    auto removed = remove_segments(segment_name(12), errors, dir_);
    EXPECT_TRUE(errors.empty());
    EXPECT_EQ(removed.size(), 4u);
    EXPECT_EQ(names(), (std::set<std::string>{"coexec.slurm.123.u0", "coexec.slurm.1.u0",
                                              "coexec.slurm.123.12.u0", "coexec.coexec.u0",
                                              "slurm.12.u0", "coexec.slurm.12.dir"}));
}

TEST_F(ShmDir, AStepsSegmentIsRemovedAndNotItsSiblingsOrTheJobs) {
    for (const char* n : {"coexec.slurm.12.3.u0", "coexec.slurm.12.31.u0", "coexec.slurm.12.u0"})
        touch(n);
    std::vector<std::string> errors;
    auto removed = remove_segments(segment_name(12, 3), errors, dir_);
    EXPECT_EQ(removed.size(), 1u);
    EXPECT_EQ(names(), (std::set<std::string>{"coexec.slurm.12.31.u0", "coexec.slurm.12.u0"}));
}

TEST_F(ShmDir, LibompsFileIsRemovedOnlyOnceItsProcessIsGone) {
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    const std::string mine = "__KMP_REGISTERED_LIB_" + std::to_string(getpid()) + "_0";
    const std::string gone = "__KMP_REGISTERED_LIB_" + std::to_string(child) + "_0";
    const std::string other = "__KMP_REGISTERED_LIB_" + std::to_string(child) + "1_0";
    touch(mine);
    touch(gone);
    touch(other);
    EXPECT_TRUE(remove_openmp_registration(getpid(), dir_).empty());
    EXPECT_EQ(remove_openmp_registration(child, dir_).size(), 1u);
    EXPECT_EQ(names(), (std::set<std::string>{mine, other}));
}

TEST(JobNode, CoresBecomeEveryThreadOfEachCore) {
    std::vector<int> cpus;
    std::string error;
    ASSERT_TRUE(job_cpus("0", cpus, error)) << error;
    ASSERT_FALSE(cpus.empty());
    // Core 0's threads share its core id in sysfs.
    auto core_of = [](int cpu) {
        std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/core_id");
        int id = -1;
        in >> id;
        return id;
    };
    for (int cpu : cpus)
        EXPECT_EQ(core_of(cpu), core_of(cpus[0])) << cpu;
}

TEST(JobNode, ACoreTheNodeLacksOrABadListIsAnError) {
    std::vector<int> cpus;
    std::string error;
    EXPECT_FALSE(job_cpus("4095", cpus, error));
    EXPECT_NE(error.find("slurmd -C"), std::string::npos) << error;
    error.clear();
    EXPECT_FALSE(job_cpus("0-x", cpus, error));
    EXPECT_NE(error.find("0-x"), std::string::npos) << error;
}

} // namespace
