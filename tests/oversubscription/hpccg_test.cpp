// HPCCG: every kernel variant, built with GCC (libgomp) and clang (libomp), follows the
// serial residual trajectory and converges to the all-ones solution.
#include "process.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <map>

namespace {

using ovs::program;
using ovs::run;

constexpr const char* kGrid = " 12 10 14"; // 1680 rows: small, yet several blocks per task

struct Variant {
    const char* binary;
    const char* args;
};

std::string describe(const testing::TestParamInfo<Variant>& info) {
    std::string name = std::string(info.param.binary) + info.param.args;
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return name;
}

class HpccgVariant : public testing::TestWithParam<Variant> {};

// The serial run of the same binary, computed once per binary.
const std::vector<double>& reference(const std::string& binary) {
    static std::map<std::string, std::vector<double>> cache;
    auto it = cache.find(binary);
    if (it == cache.end()) {
        auto out = run(program(binary) + kGrid + " --spmv serial --trace");
        EXPECT_EQ(out.exit_code, 0) << out.text;
        it = cache.emplace(binary, ovs::residuals(out.text)).first;
    }
    return it->second;
}

TEST_P(HpccgVariant, FollowsSerialTrajectoryAndConverges) {
    const Variant v = GetParam();
    const auto out = run(program(v.binary) + kGrid + " --trace " + v.args);
    ASSERT_EQ(out.exit_code, 0) << out.text;
    const auto got = ovs::residuals(out.text);
    const auto& ref = reference(v.binary);
    ASSERT_EQ(ref.size(), 149u);
    ASSERT_EQ(got.size(), ref.size()) << out.text;
    for (std::size_t k = 0; k < 30; ++k)
        EXPECT_NEAR(got[k], ref[k], 1e-6 * ref[k]) << "iteration " << k + 1;
    EXPECT_LT(got.back(), 1e-12 * ovs::number_after(out.text, "Initial Residual = "));
    EXPECT_LT(ovs::number_after(out.text, "Difference between computed and exact  = "), 1e-10);
    EXPECT_EQ(ovs::number_after(out.text, "Number of iterations: : "), 149);
}

const Variant kVariants[] = {
    {"hpccg-gcc", "--spmv omp"},
    {"hpccg-gcc", "--spmv tbb"},
    {"hpccg-gcc", "--spmv ocl"},
    {"hpccg-gcc", "--spmv omp --vec ocl"},
    {"hpccg-gcc", "--spmv omp --vec tbb"},
    {"hpccg-gcc", "--spmv tbb --vec ocl"},
    {"hpccg-gcc", "--mode tasks --tasks 1"},
    {"hpccg-gcc", "--mode tasks --tasks 7"},
    {"hpccg-gcc", "--mode tasks --tasks 64"},
    {"hpccg-gcc", "--mode tasks --tasks 4 --task-kernel ocl"},
    {"hpccg-clang", "--spmv omp"},
    {"hpccg-clang", "--spmv tbb"},
    {"hpccg-clang", "--spmv ocl"},
    {"hpccg-clang", "--spmv omp --vec ocl"},
    {"hpccg-clang", "--spmv omp --vec tbb"},
    {"hpccg-clang", "--mode tasks --tasks 1"},
    {"hpccg-clang", "--mode tasks --tasks 7"},
    {"hpccg-clang", "--mode tasks --tasks 64"},
    {"hpccg-clang", "--mode tasks --tasks 4 --task-kernel ocl"},
};

INSTANTIATE_TEST_SUITE_P(All, HpccgVariant, testing::ValuesIn(kVariants), describe);

TEST(Hpccg, PrintsMantevoFormat) {
    const auto out = run(program("hpccg-clang") + " 20 30 160 --spmv serial");
    ASSERT_EQ(out.exit_code, 0) << out.text;
    // Mantevo's own test_HPCCG prints these values for this grid.
    EXPECT_NE(out.text.find("Initial Residual = 1358.72\n"), std::string::npos) << out.text;
    EXPECT_NE(out.text.find("Iteration = 30   Residual = 0.0151087\n"), std::string::npos);
    EXPECT_NE(out.text.find("Iteration = 60   Residual = 1.72153e-07\n"), std::string::npos);
    EXPECT_NE(out.text.find("Iteration = 149   Residual = "), std::string::npos);
    EXPECT_NE(out.text.find("  SPARSEMV: "), std::string::npos);
}

// The OpenCL SpMV adds each row's products in the serial order without fusing them, so a
// run whose only OpenCL kernel is SpMV repeats the serial run bit for bit.
TEST(Hpccg, OpenClSpmvGivesTheSerialBits) {
    for (const char* binary : {"hpccg-gcc", "hpccg-clang"}) {
        const auto ocl = run(program(binary) + kGrid + " --trace --spmv ocl --vec serial");
        ASSERT_EQ(ocl.exit_code, 0) << ocl.text;
        EXPECT_EQ(ovs::residuals(ocl.text), reference(binary)) << binary;
    }
}

// A 1-point grid converges exactly in one iteration: every variant must stop there (no 0/0
// update) with x exact.
TEST(Hpccg, StopsOnExactConvergence) {
    const char* variants[] = {"--spmv serial", "--spmv omp", "--spmv ocl", "--mode tasks --tasks 4",
                              "--mode tasks --task-kernel ocl"};
    for (const char* binary : {"hpccg-gcc", "hpccg-clang"})
        for (const char* args : variants) {
            const auto out = run(program(binary) + " 1 1 1 " + args);
            ASSERT_EQ(out.exit_code, 0) << out.text;
            EXPECT_EQ(ovs::number_after(out.text, "Number of iterations: : "), 1) << args;
            EXPECT_EQ(ovs::number_after(out.text, "Difference between computed and exact  = "), 0)
                << binary << " " << args << "\n"
                << out.text;
        }
}

TEST(Hpccg, RejectsBadInput) {
    const char* bad[] = {"",
                         " 4 4",
                         " 0 4 4",
                         " 4 4 x",
                         " 4 4 4 --tasks 0",
                         " 4 4 4 --spmv mkl",
                         " 4 4 4 --bogus",
                         " 4 4 4 --tasks"};
    for (const char* args : bad) {
        const auto out = run(program("hpccg-gcc") + args);
        EXPECT_EQ(out.exit_code, 2) << args << "\n" << out.text;
        EXPECT_NE(out.text.find("usage: hpccg"), std::string::npos) << args;
    }
}

} // namespace
