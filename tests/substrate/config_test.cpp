// Configuration: defaults, overrides, TOML files, errors and warnings.
#include "core/config.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace coexec::core;

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
    EXPECT_EQ(c.binding, "all");
}

TEST(Config, OverridesAllDocumentedKeys) {
    EnvGuard g;
    ::setenv(
        "NOSV_CONFIG_OVERRIDE",
        "shared_memory.isolation_level=group,shared_memory.name=abc,scheduler.quantum_ns=5000000,"
        "governor.policy=busy,governor.spins=77,topology.binding=0-1,3,"
        "scheduler.preempt_after_ns=0",
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
          "governor.spins=-1", "scheduler.preempt_after_ns=5", "scheduler.preempt_after_ns=soon"}) {
        Config c;
        auto r = apply_overrides(c, bad);
        EXPECT_FALSE(r.ok) << bad;
        EXPECT_FALSE(r.error.empty()) << bad;
    }
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
