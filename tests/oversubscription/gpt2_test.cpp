// GPT-2: every execution mode and kernel choice, in both OpenMP builds, reproduces the serial
// reference's loss and gradients; training one batch repeatedly lowers the loss; llm.c file
// formats round-trip; bad input is rejected cleanly.
#include "process.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iterator>
#include <regex>

namespace {

using ovs::program;
using ovs::run;

// Small enough for a 2-core CI machine; vocab not a multiple of 128 exercises the padding.
constexpr const char* kModel =
    " --layers 2 --heads 2 --channels 32 --vocab 300 --max-seq 16 --batch 2 --seed 7";

std::vector<float> read_floats(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<float> out(bytes.size() / sizeof(float));
    std::copy(bytes.begin(), bytes.begin() + out.size() * sizeof(float),
              reinterpret_cast<char*>(out.data()));
    return out;
}

// Loss and gradients after the first backward pass of `args`.
std::vector<float> loss_and_grads(const std::string& binary, const std::string& args,
                                  const ovs::TempDir& dir) {
    const std::string file = dir.path("grads.bin");
    const auto out = run(program(binary) + kModel + " --steps 1 --dump-grads " + file + args);
    EXPECT_EQ(out.exit_code, 0) << out.text;
    return read_floats(file);
}

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

class Gpt2Variant : public testing::TestWithParam<Variant> {};

// Tolerance: the C++ kernels do the same float operations in the same order in every mode,
// so they agree to rounding; the OpenCL matmuls sum in another order. Every gradient must
// be within 1e-4 of the largest reference gradient's magnitude (plus 1e-7 absolute), the
// loss within 1e-5 relative.
TEST_P(Gpt2Variant, MatchesSerialLossAndGradients) {
    const Variant v = GetParam();
    ovs::TempDir dir;
    const auto ref = loss_and_grads(v.binary, " --mode serial --kernel cpp", dir);
    const auto got = loss_and_grads(v.binary, std::string(" ") + v.args, dir);
    ASSERT_GT(ref.size(), 1u);
    ASSERT_EQ(got.size(), ref.size());
    EXPECT_NEAR(got[0], ref[0], 1e-5 * std::fabs(ref[0])) << "loss";
    float scale = 0.0f;
    for (std::size_t i = 1; i < ref.size(); ++i)
        scale = std::max(scale, std::fabs(ref[i]));
    ASSERT_GT(scale, 0.0f);
    std::size_t bad = 0;
    for (std::size_t i = 1; i < ref.size(); ++i)
        if (std::fabs(got[i] - ref[i]) > 1e-4f * scale + 1e-7f) ++bad;
    EXPECT_EQ(bad, 0u) << "of " << ref.size() - 1 << " gradients differ";
}

const Variant kVariants[] = {
    {"gpt2-gcc", "--mode forkjoin"},
    {"gpt2-gcc", "--mode tasks --t-gran 1 --oc-split 1"},
    {"gpt2-gcc", "--mode tasks --t-gran 4 --oc-split 3"},
    {"gpt2-gcc", "--mode tasks --t-gran 16 --oc-split 8"},
    {"gpt2-gcc", "--mode forkjoin --kernel ocl"},
    {"gpt2-gcc", "--mode tasks --t-gran 8 --oc-split 2 --kernel ocl"},
    {"gpt2-clang", "--mode forkjoin"},
    {"gpt2-clang", "--mode tasks --t-gran 1 --oc-split 1"},
    {"gpt2-clang", "--mode tasks --t-gran 4 --oc-split 3"},
    {"gpt2-clang", "--mode tasks --t-gran 16 --oc-split 8"},
    {"gpt2-clang", "--mode forkjoin --kernel ocl"},
    {"gpt2-clang", "--mode tasks --t-gran 8 --oc-split 2 --kernel ocl"},
};

INSTANTIATE_TEST_SUITE_P(All, Gpt2Variant, testing::ValuesIn(kVariants), describe);

// The serial reference itself: each parameter tensor's largest gradient agrees with a
// central finite difference of the loss (float32, so within 2% plus a small absolute slack).
TEST(Gpt2, SerialGradientsMatchFiniteDifferences) {
    const auto out = run(program("gpt2-gcc") + kModel + " --mode serial --grad-check");
    ASSERT_EQ(out.exit_code, 0) << out.text;
    static const std::regex line(R"(grad-check tensor (\d+) analytic (\S+) numeric (\S+))");
    int checked = 0;
    for (std::sregex_iterator it(out.text.begin(), out.text.end(), line), end; it != end; ++it) {
        const double analytic = std::stod((*it)[2]), numeric = std::stod((*it)[3]);
        EXPECT_NEAR(analytic, numeric, 0.02 * std::fabs(numeric) + 2e-5) << "tensor " << (*it)[1];
        EXPECT_GT(std::fabs(analytic), 1e-4) << "tensor " << (*it)[1] << " has no gradient";
        ++checked;
    }
    EXPECT_EQ(checked, 16) << out.text;
}

// coexec re-hosts GCC-built programs by loading LLVM's libomp as libgomp.so.1. The task
// graph (depend iterators, dependency-free tasks) must work there too: same loss as libgomp.
TEST(Gpt2, GccBuildRunsOnLlvmLibomp) {
    const char* libomp = "/usr/lib/llvm-14/lib/libomp.so.5";
    if (!std::ifstream(libomp)) GTEST_SKIP() << libomp << " not installed";
    ovs::TempDir dir;
    const std::string link = dir.path("libgomp.so.1");
    ASSERT_EQ(symlink(libomp, link.c_str()), 0);
    const std::string args = kModel + std::string(" --steps 2 --mode tasks --t-gran 4");
    const auto gomp = run(program("gpt2-gcc") + args);
    const auto llvm = run("LD_LIBRARY_PATH=" + dir.path("") + " " + program("gpt2-gcc") + args);
    ASSERT_EQ(gomp.exit_code, 0) << gomp.text;
    ASSERT_EQ(llvm.exit_code, 0) << llvm.text;
    EXPECT_EQ(ovs::losses(gomp.text), ovs::losses(llvm.text));
}

TEST(Gpt2, LossFallsOnRepeatedBatch) {
    for (const char* mode : {"serial", "tasks"}) {
        const auto out = run(program("gpt2-clang") + kModel +
                             " --steps 8 --same-batch --lr 0.003 --mode " + mode);
        ASSERT_EQ(out.exit_code, 0) << out.text;
        const auto l = ovs::losses(out.text);
        ASSERT_EQ(l.size(), 8u) << out.text;
        EXPECT_NEAR(l.front(), std::log(300.0), 0.5) << "an untrained model is near uniform";
        EXPECT_LT(l.back(), l.front() - 1.0) << out.text;
    }
}

TEST(Gpt2, CheckpointRoundTrip) {
    ovs::TempDir dir;
    const std::string ckpt = dir.path("model.bin");
    const auto three = run(program("gpt2-gcc") + kModel + " --steps 3 --same-batch --lr 0.003");
    const auto saved =
        run(program("gpt2-gcc") + kModel + " --steps 2 --same-batch --lr 0.003 --save " + ckpt);
    const auto loaded =
        run(program("gpt2-gcc") + " --batch 2 --steps 1 --same-batch --seed 7 --load " + ckpt);
    ASSERT_EQ(three.exit_code, 0) << three.text;
    ASSERT_EQ(saved.exit_code, 0) << saved.text;
    ASSERT_EQ(loaded.exit_code, 0) << loaded.text;
    // The loaded model's first loss is the loss after two updates of the original run.
    EXPECT_FLOAT_EQ(ovs::losses(loaded.text).at(0), ovs::losses(three.text).at(2));
    EXPECT_NE(loaded.text.find("vocab_size: 300\npadded_vocab_size: 384\nnum_layers: 2"),
              std::string::npos)
        << loaded.text;
}

TEST(Gpt2, TokenFileRoundTrip) {
    ovs::TempDir dir;
    const std::string tokens = dir.path("tokens.bin");
    const auto gen = run(program("gpt2-gcc") + kModel + " --steps 2 --write-tokens " + tokens);
    const auto read = run(program("gpt2-gcc") + kModel + " --steps 2 --tokens " + tokens);
    ASSERT_EQ(gen.exit_code, 0) << gen.text;
    ASSERT_EQ(read.exit_code, 0) << read.text;
    EXPECT_EQ(ovs::losses(gen.text), ovs::losses(read.text));
}

TEST(Gpt2, RejectsBadInput) {
    ovs::TempDir dir;
    {
        std::ofstream junk(dir.path("junk.bin"), std::ios::binary);
        junk << "definitely not a checkpoint";
    }
    struct Case {
        std::string args;
        int code;
        const char* message;
    };
    const Case cases[] = {
        {" --heads 3 --channels 32", 2, "multiple of --heads"},
        {" --mode gpu", 2, "--mode must be one of"},
        {" --steps 0", 2, "--steps must be"},
        {" --lr abc", 2, "--lr must be"},
        {" --load " + dir.path("missing.bin"), 1, "cannot open checkpoint"},
        {" --load " + dir.path("junk.bin"), 1, "too short"},
        {" --tokens " + dir.path("junk.bin"), 1, "too short"},
        {kModel + std::string(" --seq 17"), 2, "exceeds"},
    };
    for (const Case& c : cases) {
        const auto out = run(program("gpt2-gcc") + c.args);
        EXPECT_EQ(out.exit_code, c.code) << c.args << "\n" << out.text;
        EXPECT_NE(out.text.find(c.message), std::string::npos) << c.args << "\n" << out.text;
    }
}

} // namespace
