// Python applications under `coexec run`, unmodified: Debian's NumPy on
// OpenBLAS's OpenMP build, scikit-learn and PyTorch. Each program runs stock
// and re-hosted; both must give the same result, and the re-hosted one must
// have loaded coexec's OpenMP runtime. A missing Python package skips its
// test and says which (scripts/deps/python.txt installs them).
#include "subprocess.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

namespace fs = std::filesystem;
using coexec::test::ProcessResult;
using coexec::test::run;
using coexec::test::Subprocess;
using namespace std::chrono_literals;

namespace {

// Debian's interpreter: a python3 earlier on PATH may not see its packages.
const std::string kPython = "/usr/bin/python3";
const std::string kOmpDir = COEXEC_TEST_OMP_DIR;
const std::string kProgramDir = COEXEC_TEST_PYTHON_DIR;
const std::string kCoexecCli = COEXEC_TEST_CLI;

using Env = std::map<std::string, std::string>;

Env base_env() {
    return {
        {"OMP_NUM_THREADS", "2"}, {"PYTHONPATH", kProgramDir}, {"PYTHONDONTWRITEBYTECODE", "1"}};
}

// The segments this test's runs use. A run killed at its timeout leaves
// its segment in /dev/shm (a killed member keeps the name for the next
// member to reap); the test process removes each one when it exits, after
// every run it started was reaped (Subprocess).
class TestSegments {
  public:
    void add(const std::string& name) { names_.push_back(name); }
    ~TestSegments() {
        std::error_code ec;
        for (const std::string& n : names_)
            std::filesystem::remove("/dev/shm/coexec." + n + ".u" + std::to_string(geteuid()), ec);
    }

  private:
    std::vector<std::string> names_;
};

Env coexec_env(const std::string& tag) {
    static TestSegments segments;
    const std::string name = "pytest-" + tag + "-" + std::to_string(getpid());
    segments.add(name);
    Env env = base_env();
    env["COEXEC_CONFIG_OVERRIDE"] = "shared_memory.name=" + name;
    return env;
}

// The value after "key: " on its own line of `out`, or "".
std::string field(const std::string& out, const std::string& key) {
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
    return "";
}

std::vector<double> numbers(const std::string& text) {
    std::istringstream in(text);
    std::vector<double> out;
    for (double x; in >> x;)
        out.push_back(x);
    return out;
}

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        if (w != "none") out.push_back(w);
    return out;
}

// Skips the test unless `modules` import under Debian's interpreter.
bool importable(const std::string& modules) {
    return run({kPython, "-c", "import " + modules}, {}, 120s).exit_code == 0;
}

std::vector<std::string> stock_argv(const std::string& script) {
    return {kPython, kProgramDir + "/" + script};
}

std::vector<std::string> coexec_argv(const std::string& script) {
    return {kCoexecCli, "run", "--openmp", "--", kPython, kProgramDir + "/" + script};
}

// Runs `script` stock and under coexec; expects the same numbers (within
// `tolerance`, relative: thread scheduling may reorder a reduction) and
// that coexec's OpenMP runtime served the re-hosted run.
void expect_same_result(const std::string& script, double tolerance) {
    const ProcessResult stock = run(stock_argv(script), base_env(), 300s);
    ASSERT_FALSE(stock.timed_out);
    ASSERT_EQ(stock.exit_code, 0) << stock.err;
    const ProcessResult hosted = run(coexec_argv(script), coexec_env(script), 300s);
    ASSERT_FALSE(hosted.timed_out) << "hung under coexec; stderr:\n" << hosted.err;
    ASSERT_EQ(hosted.exit_code, 0) << hosted.err;
    const auto want = numbers(field(stock.out, "result"));
    const auto got = numbers(field(hosted.out, "result"));
    ASSERT_FALSE(want.empty()) << stock.out;
    ASSERT_EQ(got.size(), want.size()) << hosted.out;
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], tolerance * std::abs(want[i])) << "value " << i;
    // Every OpenMP runtime the re-hosted run mapped is coexec's (a system
    // libgomp beside it would run its own threads); the stock run maps none.
    const auto hosted_runtimes = words(field(hosted.out, "openmp"));
    ASSERT_FALSE(hosted_runtimes.empty()) << hosted.out;
    for (const std::string& path : hosted_runtimes)
        EXPECT_EQ(path.rfind(kOmpDir, 0), 0u) << "the re-hosted run mapped " << path;
    for (const std::string& path : words(field(stock.out, "openmp")))
        EXPECT_EQ(path.rfind(kOmpDir, 0), std::string::npos) << "the stock run mapped " << path;
}

} // namespace

TEST(PythonNumpy, MatmulsOnOpenblasGiveTheStockResult) {
    if (!importable("numpy")) GTEST_SKIP() << "python3-numpy is not installed";
    expect_same_result("numpy_matmul.py", 1e-12);
}

// `coexec run` keeps the BLAS the system names (Debian's default is
// OpenBLAS's pthreads build), and the threads the program starts
// (OpenBLAS's pool) are coexec threads by default (COEXEC_HOST_THREADS=all),
// but not with COEXEC_HOST_THREADS=main. COEXEC_OPENBLAS_DIR puts another
// build first.
TEST(PythonNumpy, CoexecRunKeepsTheSystemBlasAndHostsTheProgramsThreads) {
    if (!importable("numpy")) GTEST_SKIP() << "python3-numpy is not installed";
    const ProcessResult stock = run(stock_argv("numpy_matmul.py"), base_env(), 300s);
    ASSERT_EQ(stock.exit_code, 0) << stock.err;
    EXPECT_EQ(field(stock.out, "hosted_threads"), "none");
    const ProcessResult r = run(coexec_argv("numpy_matmul.py"), coexec_env("blas"), 300s);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(field(r.out, "blas"), field(stock.out, "blas"));
    EXPECT_EQ(field(r.out, "hosted_threads"), "2 of 2") << r.out;
    Env main_only = coexec_env("blas-main");
    main_only["COEXEC_HOST_THREADS"] = "main";
    const ProcessResult m = run(coexec_argv("numpy_matmul.py"), main_only, 300s);
    ASSERT_EQ(m.exit_code, 0) << m.err;
    EXPECT_EQ(field(m.out, "hosted_threads"), "0 of 2") << m.out;
    const std::string openmp_build = "/usr/lib/x86_64-linux-gnu/openblas-openmp";
    if (access((openmp_build + "/libopenblas.so.0").c_str(), F_OK) != 0)
        GTEST_SKIP() << "libopenblas0-openmp is not installed";
    Env env = coexec_env("blas-dir");
    env["COEXEC_OPENBLAS_DIR"] = openmp_build;
    const ProcessResult o = run(coexec_argv("numpy_matmul.py"), env, 300s);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NE(field(o.out, "blas").find("openblas-openmp"), std::string::npos) << o.out;
    EXPECT_EQ(field(o.out, "result"), field(stock.out, "result"));
}

// NumPy's own linear-algebra tests (Debian's python3-pytest) pass under
// `coexec run`, as they do stock: BLAS and LAPACK from the hosted main
// thread and from the threads its tests start. (numpy.core's take minutes,
// and so do these with every thread hosted next to CPU hogs outside coexec:
// docs/python.md gives those runs' results.)
TEST(PythonNumpy, ItsOwnLinalgTestsPassUnderCoexecRun) {
    if (!importable("numpy, pytest")) GTEST_SKIP() << "python3-numpy or python3-pytest is missing";
    const std::vector<std::string> pytest{kPython,        "-m", "pytest", "--pyargs",
                                          "numpy.linalg", "-q", "-p",     "no:cacheprovider"};
    std::vector<std::string> argv{kCoexecCli, "run", "--"};
    argv.insert(argv.end(), pytest.begin(), pytest.end());
    Env env = coexec_env("numpy-linalg");
    env.erase("OMP_NUM_THREADS"); // the libraries' defaults
    const ProcessResult r = run(argv, env, 540s);
    ASSERT_FALSE(r.timed_out) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0);
    EXPECT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0)
                              << r.err;
    EXPECT_NE(r.out.find(" passed"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(" failed"), std::string::npos) << r.out;
}

TEST(PythonNumpy, FourProcessesAtOnceEachGiveTheStockResult) {
    if (!importable("numpy")) GTEST_SKIP() << "python3-numpy is not installed";
    const ProcessResult stock = run(stock_argv("numpy_matmul.py"), base_env(), 300s);
    ASSERT_EQ(stock.exit_code, 0) << stock.err;
    const Env env = coexec_env("four"); // one segment: the four share the CPUs
    std::vector<std::unique_ptr<Subprocess>> procs;
    for (int i = 0; i < 4; ++i)
        procs.push_back(std::make_unique<Subprocess>(coexec_argv("numpy_matmul.py"), env));
    for (auto& p : procs) {
        const ProcessResult r = p->wait(300s);
        ASSERT_FALSE(r.timed_out) << "a process hung; stderr:\n" << r.err;
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(field(r.out, "result"), field(stock.out, "result"));
    }
}

TEST(PythonSklearn, KMeansNextToBlasGivesTheStockResult) {
    if (!importable("sklearn.cluster")) GTEST_SKIP() << "python3-sklearn is not installed";
    expect_same_result("sklearn_kmeans.py", 1e-9);
}

TEST(PythonTorch, TransformerEncoderGivesTheStockResult) {
    if (!importable("torch")) GTEST_SKIP() << "python3-torch is not installed";
    expect_same_result("torch_encoder.py", 1e-5);
}
