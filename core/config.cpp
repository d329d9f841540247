#include "config.hpp"

#include "shm/segment.hpp"

#include <charconv>
#include <cstdlib>
#include <toml++/toml.h>

namespace coexec::core {
namespace {

// nOS-V keys that coexec accepts and ignores, without a warning.
constexpr const char* kIgnoredNosvKeys[] = {
    "shared_memory.size",      "shared_memory.start",     "scheduler.cpus_per_queue",
    "scheduler.queue_batch",   "scheduler.in_queue_size", "debug.dump_config",
    "hwcounters.verbose",      "hwcounters.backend",      "instrumentation.version",
    "turbo.enabled",           "monitoring.enabled",      "monitoring.verbose",
    "thread.stack_size",       "affinity.default",        "affinity.default_policy",
    "affinity.compat_support", "misc.stack_size"};

bool parse_u64(const std::string& text, uint64_t& out) {
    auto* b = text.data();
    auto* e = b + text.size();
    auto r = std::from_chars(b, e, out);
    return r.ec == std::errc() && r.ptr == e;
}

std::string unquote(std::string v) {
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
        return v.substr(1, v.size() - 2);
    return v;
}

ConfigResult error(std::string message) {
    return ConfigResult{false, std::move(message), {}};
}

ConfigResult load_file(Config& cfg, const std::string& path) {
    toml::table table;
    try {
        table = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        return error("cannot read configuration file " + path + ": " +
                     std::string(e.description()));
    }
    ConfigResult result;
    for (auto& [section, node] : table) {
        const toml::table* sub = node.as_table();
        if (!sub) {
            result.warnings.push_back("configuration key '" + std::string(section.str()) +
                                      "' is unknown, ignored");
            continue;
        }
        for (auto& [key, value] : *sub) {
            std::string full = std::string(section.str()) + "." + std::string(key.str());
            std::string text;
            if (auto s = value.value<std::string>())
                text = *s;
            else if (auto i = value.value<int64_t>())
                text = std::to_string(*i);
            else if (auto b = value.value<bool>())
                text = *b ? "true" : "false";
            else {
                result.warnings.push_back("configuration key '" + full +
                                          "' has an unsupported type, ignored");
                continue;
            }
            ConfigResult r = apply_setting(cfg, full, text);
            if (!r.ok) return r;
            result.warnings.insert(result.warnings.end(), r.warnings.begin(), r.warnings.end());
        }
    }
    return result;
}

const char* env_either(const char* a, const char* b) {
    const char* v = std::getenv(a);
    return v && *v ? v : std::getenv(b);
}

} // namespace

const char* governor_name(GovernorPolicy p) {
    switch (p) {
    case GovernorPolicy::Hybrid:
        return "hybrid";
    case GovernorPolicy::Idle:
        return "idle";
    case GovernorPolicy::Busy:
        return "busy";
    }
    return "?";
}

ConfigResult apply_setting(Config& cfg, const std::string& key, const std::string& raw) {
    const std::string value = unquote(raw);
    uint64_t n = 0;
    if (key == "shared_memory.isolation_level") {
        if (!shm::parse_isolation(value, cfg.isolation))
            return error(
                "shared_memory.isolation_level must be process, user, group or public, not '" +
                value + "'");
    } else if (key == "shared_memory.name") {
        if (value.empty() || value.size() > 64 || value.find('/') != std::string::npos)
            return error("shared_memory.name must be 1-64 characters without '/', not '" + value +
                         "'");
        cfg.shm_name = value;
    } else if (key == "scheduler.quantum_ns") {
        if (!parse_u64(value, n) || n < 1000 || n > 60'000'000'000ULL)
            return error("scheduler.quantum_ns must be an integer from 1000 to 60000000000, not '" +
                         value + "'");
        cfg.quantum_ns = n;
    } else if (key == "scheduler.preempt_after_ns") {
        if (!parse_u64(value, n) || (n != 0 && n < 1'000'000) || n > 60'000'000'000ULL)
            return error(
                "scheduler.preempt_after_ns must be 0 (never) or an integer from 1000000 to "
                "60000000000, not '" +
                value + "'");
        cfg.preempt_after_ns = n;
    } else if (key == "governor.policy") {
        if (value == "hybrid")
            cfg.governor = GovernorPolicy::Hybrid;
        else if (value == "idle")
            cfg.governor = GovernorPolicy::Idle;
        else if (value == "busy")
            cfg.governor = GovernorPolicy::Busy;
        else
            return error("governor.policy must be hybrid, idle or busy, not '" + value + "'");
    } else if (key == "governor.spins") {
        if (!parse_u64(value, n) || n > 1'000'000'000ULL)
            return error("governor.spins must be an integer from 0 to 1000000000, not '" + value +
                         "'");
        cfg.governor_spins = uint32_t(n);
    } else if (key == "topology.binding") {
        if (value.empty()) return error("topology.binding must not be empty");
        cfg.binding = value;
    } else {
        for (const char* k : kIgnoredNosvKeys)
            if (key == k) return {};
        return ConfigResult{true, {}, {"configuration key '" + key + "' is unknown, ignored"}};
    }
    return {};
}

ConfigResult apply_overrides(Config& cfg, const std::string& overrides) {
    // Split into settings; a piece without '=' belongs to the previous value.
    std::vector<std::pair<std::string, std::string>> settings;
    size_t pos = 0;
    while (pos <= overrides.size()) {
        size_t comma = overrides.find(',', pos);
        std::string piece =
            overrides.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        size_t eq = piece.find('=');
        if (eq == std::string::npos) {
            if (settings.empty()) {
                if (!piece.empty())
                    return error("configuration override '" + piece + "' is not key=value");
            } else {
                settings.back().second += "," + piece;
            }
        } else {
            settings.emplace_back(piece.substr(0, eq), piece.substr(eq + 1));
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    ConfigResult result;
    for (auto& [k, v] : settings) {
        ConfigResult r = apply_setting(cfg, k, v);
        if (!r.ok) return r;
        result.warnings.insert(result.warnings.end(), r.warnings.begin(), r.warnings.end());
    }
    return result;
}

ConfigResult load_config(Config& out) {
    out = Config{};
    ConfigResult result;
    if (const char* file = env_either("NOSV_CONFIG", "COEXEC_CONFIG"); file && *file) {
        result = load_file(out, file);
        if (!result.ok) return result;
    }
    if (const char* ov = env_either("NOSV_CONFIG_OVERRIDE", "COEXEC_CONFIG_OVERRIDE"); ov && *ov) {
        ConfigResult r = apply_overrides(out, ov);
        if (!r.ok) return r;
        result.warnings.insert(result.warnings.end(), r.warnings.begin(), r.warnings.end());
    }
    return result;
}

} // namespace coexec::core
