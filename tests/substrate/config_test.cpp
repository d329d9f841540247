// Configuration: defaults, overrides, TOML files, errors and warnings.
#include "config/config.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace coexec::config;

namespace {
struct EnvGuard {
    ~EnvGuard() {
        for (auto* v :
             {"NOSV_CONFIG", "NOSV_CONFIG_OVERRIDE", "COEXEC_CONFIG", "COEXEC_CONFIG_OVERRIDE"})
            ::unsetenv(v);
    }
};
} // namespace

TEST(Config, Defaults) {
    EnvGuard g;
    Config c;
    auto r = load_config(c);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(c.quantum_ns, 20'000'000u);
    EXPECT_EQ(c.preempt_after_ns, 100'000'000u);
    EXPECT_EQ(c.isolation, coexec::shm::Isolation::User);
    EXPECT_EQ(c.governor, GovernorPolicy::Hybrid);
    EXPECT_EQ(c.binding, "inherit");
}

TEST(Config, OverridesAllDocumentedKeys) {
    EnvGuard g;
    ::setenv(
        "NOSV_CONFIG_OVERRIDE",
        "shared_memory.isolation_level=group,shared_memory.name=abc,scheduler.quantum_ns=5000000,"
        "governor.policy=busy,governor.spins=77,topology.binding=0-1,3,"
        "scheduler.preempt_after_ns=0,threads.sched_batch=false",
        1);
    Config c;
    auto r = load_config(c);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(c.isolation, coexec::shm::Isolation::Group);
    EXPECT_EQ(c.shm_name, "abc");
    EXPECT_EQ(c.quantum_ns, 5'000'000u);
    EXPECT_EQ(c.governor, GovernorPolicy::Busy);
    EXPECT_EQ(c.governor_spins, 77u);
    EXPECT_EQ(c.binding, "0-1,3"); // the comma inside the CPU list survives
    EXPECT_EQ(c.preempt_after_ns, 0u);
    EXPECT_FALSE(c.sched_batch);
    EXPECT_TRUE(r.warnings.empty());
}

TEST(Config, CoexecSynonymsAndFileThenOverride) {
    EnvGuard g;
    char path[] = "/tmp/coexec-config-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    {
        std::ofstream f(path);
        f << "[scheduler]\nquantum_ns = 1000000\n[governor]\npolicy = "
             "\"idle\"\n[shared_memory]\nsize = \"2G\"\n"
             "[bogus]\nkey = 1\n";
    }
    ::setenv("COEXEC_CONFIG", path, 1);
    ::setenv("COEXEC_CONFIG_OVERRIDE", "scheduler.quantum_ns=3000000", 1);
    Config c;
    auto r = load_config(c);
    ::unlink(path);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(c.quantum_ns, 3'000'000u); // override beats the file
    EXPECT_EQ(c.governor, GovernorPolicy::Idle);
    ASSERT_EQ(r.warnings.size(), 1u); // shared_memory.size is a known nOS-V key: no warning
    EXPECT_NE(r.warnings[0].find("bogus.key"), std::string::npos);
}

TEST(Config, BadValuesAreErrors) {
    EnvGuard g;
    for (const char* bad :
         {"scheduler.quantum_ns=abc", "scheduler.quantum_ns=5", "governor.policy=fast",
          "shared_memory.isolation_level=world", "shared_memory.name=a/b", "novalue",
          "governor.spins=-1", "scheduler.preempt_after_ns=5", "scheduler.preempt_after_ns=soon",
          "threads.sched_batch=1", "affinity.compat_support=no"}) {
        Config c;
        auto r = apply_overrides(c, bad);
        EXPECT_FALSE(r.ok) << bad;
        EXPECT_FALSE(r.error.empty()) << bad;
    }
}

// nOS-V's thread_affinity.compat_support, and the name coexec accepted
// before, each switch what managed threads see of their affinity.
TEST(Config, CompatSupportSwitchesTheAffinityThreadsSee) {
    Config c;
    EXPECT_TRUE(c.affinity_compat);
    auto off = apply_overrides(c, "thread_affinity.compat_support=false");
    EXPECT_TRUE(off.ok);
    EXPECT_TRUE(off.warnings.empty());
    EXPECT_FALSE(c.affinity_compat);
    auto on = apply_overrides(c, "affinity.compat_support=true");
    EXPECT_TRUE(on.ok);
    EXPECT_TRUE(on.warnings.empty());
    EXPECT_TRUE(c.affinity_compat);
    EXPECT_FALSE(apply_overrides(c, "thread_affinity.compat_support=no").ok);
}

TEST(Config, UnknownKeyIsAWarningNotAnError) {
    Config c;
    auto r = apply_overrides(c, "foo.bar=1");
    EXPECT_TRUE(r.ok);
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_NE(r.warnings[0].find("foo.bar"), std::string::npos);
}

TEST(Config, MissingOrBrokenFileIsAnError) {
    EnvGuard g;
    ::setenv("NOSV_CONFIG", "/nonexistent/coexec.toml", 1);
    Config c;
    auto r = load_config(c);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("/nonexistent/coexec.toml"), std::string::npos);
}

// Found by the config_override/config_file fuzzers (tests/fuzz): a NUL in
// the name would cut the shm_open() path short without a word.
TEST(Config, NameWithNulOrControlCharacterIsAnError) {
    for (std::string bad : {std::string("a\0b", 3), std::string("a\x01"), std::string("\x7f")}) {
        Config c;
        auto r = apply_setting(c, "shared_memory.name", bad);
        EXPECT_FALSE(r.ok);
        EXPECT_EQ(r.error.find('\0'), std::string::npos) << "the message shows it as '?'";
        EXPECT_EQ(c.shm_name, "coexec");
    }
    Config c;
    EXPECT_TRUE(apply_setting(c, "shared_memory.name", "node 1").ok);
}

TEST(Config, ConfigTextAppliesScalarsOfEveryType) {
    Config c;
    auto r = apply_config_text(c,
                               "[scheduler]\nquantum_ns = 1.5e6\n"
                               "[governor]\npolicy = 'idle'\n"
                               "[debug]\ndump_config = true\n",
                               "t.toml");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(c.quantum_ns, 1'500'000u); // a float that is a whole number
    EXPECT_EQ(c.governor, GovernorPolicy::Idle);
    EXPECT_TRUE(r.warnings.empty());
}

// Regression (config_file fuzzer): toml++'s converting getter cast floats
// beyond int64_t (undefined behaviour) and turned booleans into 0/1.
TEST(Config, FloatsOutOfRangeAndBooleansAreNotIntegers) {
    Config c;
    auto r = apply_config_text(c, "[scheduler]\nquantum_ns = 1e27\npreempt_after_ns = nan\n", "t");
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.warnings.size(), 2u); // unsupported type, ignored
    EXPECT_EQ(c.quantum_ns, Config{}.quantum_ns);
    r = apply_config_text(c, "[governor]\nspins = true\n", "t");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("'true'"), std::string::npos) << r.error;
}

// Regression (config_file fuzzer): toml++ 3.3 reaches an unreachable point
// on some non-ASCII code points, so such documents are refused first.
TEST(Config, NonAsciiDocumentIsAnErrorWithItsPosition) {
    Config c;
    auto r =
        apply_config_text(c, "[scheduler]\n# \xc3\xa9t\xc3\xa9\nquantum_ns = 1000000\n", "t.toml");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("line 2, column 3"), std::string::npos) << r.error;
    EXPECT_EQ(c.quantum_ns, Config{}.quantum_ns);
}

// Regression (config_file fuzzer): toml++ 3.3 assumes that a name follows a
// table header's brackets (undefined behaviour otherwise), so such headers
// are refused first; a nested array in a value is not a header.
TEST(Config, TableHeaderWithoutANameIsAnErrorWithItsPosition) {
    for (const char* doc : {"[.startl = sch}\n", "[scheduler]\nquantum_ns = 5\n  [[[a]]]\n", "[\n",
                            "[[=\n", "[ #\n"}) {
        Config c;
        auto r = apply_config_text(c, doc, "t.toml");
        EXPECT_FALSE(r.ok) << doc;
        EXPECT_NE(r.error.find("table header needs a name"), std::string::npos) << r.error;
    }
    Config c;
    auto r = apply_config_text(c, "[scheduler]\nquantum_ns = 5\n  [[[a]]]\n", "t.toml");
    EXPECT_NE(r.error.find("line 3, column 5"), std::string::npos) << r.error;
    // Headers toml++ checks itself, and names that are fine.
    for (const char* doc : {"[ [a]]\n", "[]\n", "[[]]\n", "["}) {
        r = apply_config_text(c, doc, "t.toml");
        EXPECT_FALSE(r.ok) << doc;
        EXPECT_EQ(r.error.find("table header needs a name"), std::string::npos) << r.error;
    }
    for (const char* doc : {"[ scheduler ]\nquantum_ns = 5000\n",
                            "[\"scheduler\"]\nquantum_ns = 5000\n", "\t[governor]\nspins = 7\n"}) {
        r = apply_config_text(c, doc, "t.toml");
        EXPECT_TRUE(r.ok) << doc << ": " << r.error;
    }
    EXPECT_EQ(c.quantum_ns, 5000u);
    EXPECT_EQ(c.governor_spins, 7u);
}

TEST(Config, MalformedTomlNamesTheLine) {
    Config c;
    auto r = apply_config_text(c, "[scheduler]\nquantum_ns = \n", "bad.toml");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("bad.toml"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("line 2"), std::string::npos) << r.error;
}

// A directory, a device or a FIFO is refused without reading or blocking.
TEST(Config, ConfigFileMustBeARegularFile) {
    EnvGuard g;
    char dir[] = "/tmp/coexec-config-dir-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    std::string fifo = std::string(dir) + "/fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (std::string path : {std::string(dir), std::string("/dev/zero"), fifo}) {
        ::setenv("NOSV_CONFIG", path.c_str(), 1);
        Config c;
        auto r = load_config(c);
        EXPECT_FALSE(r.ok) << path;
        EXPECT_NE(r.error.find("not a regular file"), std::string::npos) << r.error;
    }
    ::unlink(fifo.c_str());
    ::rmdir(dir);
}

TEST(Config, OversizedConfigFileIsAnError) {
    EnvGuard g;
    char path[] = "/tmp/coexec-config-XXXXXX";
    int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    {
        std::ofstream f(path);
        f << std::string(kMaxConfigFileSize + 1, '#');
    }
    ::setenv("NOSV_CONFIG", path, 1);
    Config c;
    auto r = load_config(c);
    ::unlink(path);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("larger than"), std::string::npos) << r.error;
}
