// Runtime configuration: defaults, then a TOML file (NOSV_CONFIG or
// COEXEC_CONFIG), then overrides (NOSV_CONFIG_OVERRIDE or
// COEXEC_CONFIG_OVERRIDE, "key=value,key=value").
#pragma once

#include "shm/layout.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coexec::config {

enum class GovernorPolicy : uint32_t { Hybrid = 0, Idle = 1, Busy = 2 };

struct Config {
    std::string shm_name = "coexec";
    shm::Isolation isolation = shm::Isolation::User;
    uint64_t quantum_ns = 20'000'000;
    uint64_t preempt_after_ns = 100'000'000; // 0: never preempt
    GovernorPolicy governor = GovernorPolicy::Hybrid;
    uint32_t governor_spins = 10'000;
    std::string binding = "inherit";
    bool sched_batch = true; // managed threads run under SCHED_BATCH (CpuBinding::adopt)
    // nOS-V's thread_affinity.compat_support: managed threads see, through
    // sched_getaffinity and pthread_getaffinity_np, the mask they had before
    // coexec pinned them (true), or the kernel's mask (false).
    bool affinity_compat = true;
};

struct ConfigResult {
    bool ok = true;
    std::string error;                 // why loading failed (bad value, bad file)
    std::vector<std::string> warnings; // unknown or unsupported keys
};

// Builds the configuration from the environment.
ConfigResult load_config(Config& out);

// Largest configuration file load_config() reads; a bigger one is an error.
inline constexpr size_t kMaxConfigFileSize = 1 << 20;

// Applies the settings of a TOML configuration document `text` (the contents
// of a NOSV_CONFIG file) on top of `cfg`. `source` names the document in
// error messages. Never throws: malformed TOML, bytes outside ASCII and bad
// values are errors; unknown keys and unsupported value types are warnings. Settings before
// the first bad value may have been applied to `cfg`.
ConfigResult apply_config_text(Config& cfg, std::string_view text, const std::string& source);

// Applies one "key=value" setting; used for files and overrides alike.
ConfigResult apply_setting(Config& cfg, const std::string& key, const std::string& value);

// Applies an override string ("a.b=1,c.d=x"). A comma followed by text
// without '=' continues the previous value, so "topology.binding=0-1,3" works.
ConfigResult apply_overrides(Config& cfg, const std::string& overrides);

const char* governor_name(GovernorPolicy p);

} // namespace coexec::config
