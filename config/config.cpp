#include "config/config.hpp"

#include "shm/segment.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

namespace coexec::config {
namespace {

// nOS-V keys that coexec accepts and ignores, without a warning.
constexpr const char* kIgnoredNosvKeys[] = {
    "shared_memory.size",    "shared_memory.start",     "scheduler.cpus_per_queue",
    "scheduler.queue_batch", "scheduler.in_queue_size", "debug.dump_config",
    "hwcounters.verbose",    "hwcounters.backend",      "instrumentation.version",
    "turbo.enabled",         "monitoring.enabled",      "monitoring.verbose",
    "thread.stack_size",     "affinity.default",        "affinity.default_policy",
    "misc.stack_size"};

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

// `text` with control characters (a NUL too) shown as '?', for messages.
std::string printable_text(std::string text) {
    for (char& c : text)
        if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
    return text;
}

ConfigResult error(std::string message) {
    return ConfigResult{false, std::move(message), {}};
}

// The text of a scalar TOML value as an override would give it, or nullopt
// for arrays, tables, dates and floats that are not whole numbers. Exact
// node types only: toml++'s converting value<int64_t>() casts a float out
// of int64_t's range (undefined behaviour), and turns booleans into 0/1.
std::optional<std::string> scalar_text(const toml::node& value) {
    if (const auto* s = value.as_string()) return s->get();
    if (const auto* i = value.as_integer()) return std::to_string(i->get());
    if (const auto* b = value.as_boolean()) return b->get() ? "true" : "false";
    if (const auto* f = value.as_floating_point()) {
        // "quantum_ns = 1.5e6" is a whole number: accepted. The range check
        // comes before the conversion (2^63 is exact in a double).
        const double d = f->get();
        if (std::isfinite(d) && d == std::trunc(d) && d >= -9223372036854775808.0 &&
            d < 9223372036854775808.0)
            return std::to_string(int64_t(d));
    }
    return std::nullopt;
}

// Applies every "section.key = value" of a parsed document.
ConfigResult apply_table(Config& cfg, const toml::table& table) {
    ConfigResult result;
    for (auto& [section, node] : table) {
        const toml::table* sub = node.as_table();
        if (!sub) {
            result.warnings.push_back("configuration key '" +
                                      printable_text(std::string(section.str())) +
                                      "' is unknown, ignored");
            continue;
        }
        for (auto& [key, value] : *sub) {
            std::string full = std::string(section.str()) + "." + std::string(key.str());
            std::optional<std::string> text = scalar_text(value);
            if (!text) {
                result.warnings.push_back("configuration key '" + printable_text(full) +
                                          "' has an unsupported type, ignored");
                continue;
            }
            ConfigResult r = apply_setting(cfg, full, *text);
            if (!r.ok) return r;
            result.warnings.insert(result.warnings.end(), r.warnings.begin(), r.warnings.end());
        }
    }
    return result;
}

// Reads a configuration file into `text`. Only a regular file of bounded
// size is read: a directory, FIFO or device (/dev/zero) is refused rather
// than read forever, and opening does not block on a FIFO.
ConfigResult read_file(const std::string& path, std::string& text) {
    auto cannot = [&](const std::string& why) {
        return error("cannot read configuration file " + path + ": " + why);
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return cannot(std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return cannot("not a regular file");
    }
    // Files in /proc report size 0, so read up to the limit whatever the size.
    text.clear();
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(fd);
            return cannot(std::strerror(err));
        }
        if (n == 0) break;
        text.append(buf, size_t(n));
        if (text.size() > kMaxConfigFileSize) {
            ::close(fd);
            return cannot("larger than " + std::to_string(kMaxConfigFileSize) + " bytes");
        }
    }
    ::close(fd);
    return {};
}

ConfigResult load_file(Config& cfg, const std::string& path) {
    std::string text;
    ConfigResult r = read_file(path, text);
    return r.ok ? apply_config_text(cfg, text, path) : r;
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
                printable_text(value) + "'");
    } else if (key == "shared_memory.name") {
        // The name becomes part of a path for shm_open(): a NUL would cut it
        // short silently, and control characters would garble messages.
        bool printable = std::all_of(value.begin(), value.end(), [](char c) {
            return (unsigned char)c >= 0x20 && c != 0x7f && c != '/';
        });
        if (value.empty() || value.size() > 64 || !printable)
            return error("shared_memory.name must be 1-64 printable characters without '/', not '" +
                         printable_text(value) + "'");
        cfg.shm_name = value;
    } else if (key == "scheduler.quantum_ns") {
        if (!parse_u64(value, n) || n < 1000 || n > 60'000'000'000ULL)
            return error("scheduler.quantum_ns must be an integer from 1000 to 60000000000, not '" +
                         printable_text(value) + "'");
        cfg.quantum_ns = n;
    } else if (key == "scheduler.preempt_after_ns") {
        if (!parse_u64(value, n) || (n != 0 && n < 1'000'000) || n > 60'000'000'000ULL)
            return error(
                "scheduler.preempt_after_ns must be 0 (never) or an integer from 1000000 to "
                "60000000000, not '" +
                printable_text(value) + "'");
        cfg.preempt_after_ns = n;
    } else if (key == "governor.policy") {
        if (value == "hybrid")
            cfg.governor = GovernorPolicy::Hybrid;
        else if (value == "idle")
            cfg.governor = GovernorPolicy::Idle;
        else if (value == "busy")
            cfg.governor = GovernorPolicy::Busy;
        else
            return error("governor.policy must be hybrid, idle or busy, not '" +
                         printable_text(value) + "'");
    } else if (key == "governor.spins") {
        if (!parse_u64(value, n) || n > 1'000'000'000ULL)
            return error("governor.spins must be an integer from 0 to 1000000000, not '" + value +
                         "'");
        cfg.governor_spins = uint32_t(n);
    } else if (key == "threads.sched_batch") {
        if (value != "true" && value != "false")
            return error("threads.sched_batch must be true or false, not '" +
                         printable_text(value) + "'");
        cfg.sched_batch = value == "true";
    } else if (key == "topology.binding") {
        if (value.empty()) return error("topology.binding must not be empty");
        cfg.binding = value;
    } else if (key == "thread_affinity.compat_support" || key == "affinity.compat_support") {
        // nOS-V's name first; coexec accepted the second before it knew it.
        if (value != "true" && value != "false")
            return error(key + " must be true or false, not '" + printable_text(value) + "'");
        cfg.affinity_compat = value == "true";
    } else {
        for (const char* k : kIgnoredNosvKeys)
            if (key == k) return {};
        return ConfigResult{
            true, {}, {"configuration key '" + printable_text(key) + "' is unknown, ignored"}};
    }
    return {};
}

namespace {

// toml++ 3.3 (Debian 12) enters its key parser after a table header's '['
// (or "[[") whatever comes next, and assumes a name starts there: with
// NDEBUG, __builtin_assume() of a false condition, undefined behaviour, on
// "[.x]", "[[[a]]]" or a '[' that ends its line (fixed upstream after 3.4,
// tomlplusplus pull request #301). Finds the first header that does not
// start a name (a bare-key character or a quote) after its brackets, and
// where: line and column, from 1. A header is a '[' first on its line,
// after spaces and tabs; so is the opening of a nested array inside a
// multi-line array value, and such a line ("[" alone, "[{...}]") is
// refused too, which no coexec key needs.
struct TextPosition {
    size_t line = 0, column = 0;
};
std::optional<TextPosition> bad_table_header(std::string_view text) {
    auto is_blank = [](char c) { return c == ' ' || c == '\t'; };
    auto starts_name = [](char c) {
        return std::isalnum((unsigned char)c) || c == '_' || c == '-' || c == '"' || c == '\'';
    };
    size_t line_number = 1;
    for (size_t line = 0; line < text.size(); ++line_number) {
        size_t i = line;
        auto skip_blanks = [&] {
            while (i < text.size() && is_blank(text[i]))
                ++i;
        };
        skip_blanks();
        if (i < text.size() && text[i] == '[') {
            ++i;
            const bool array = i < text.size() && text[i] == '[';
            if (array) ++i;
            skip_blanks();
            // The end of the text, a ']', and a '[' after "[ " are errors
            // toml++ reports itself.
            if (i < text.size() && text[i] != ']' && !(text[i] == '[' && !array) &&
                !starts_name(text[i]))
                return TextPosition{line_number, i - line + 1};
        }
        const size_t end = text.find('\n', line);
        if (end == std::string_view::npos) break;
        line = end + 1;
    }
    return std::nullopt;
}

} // namespace

ConfigResult apply_config_text(Config& cfg, std::string_view text, const std::string& source) {
    // toml++ 3.3 (Debian 12) reaches __builtin_unreachable() on some
    // non-ASCII code points (upstream issues #190 and #295): undefined
    // behaviour inside the parser. Every key and value coexec knows is
    // ASCII, so a document with other bytes is refused before parsing.
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            line_start = i + 1;
        } else if ((unsigned char)text[i] >= 0x80) {
            return error("configuration file " + source + " has a non-ASCII character (line " +
                         std::to_string(line) + ", column " + std::to_string(i - line_start + 1) +
                         "); only ASCII is accepted");
        }
    }
    if (const std::optional<TextPosition> at = bad_table_header(text))
        return error("configuration file " + source + " is not valid TOML (line " +
                     std::to_string(at->line) + ", column " + std::to_string(at->column) +
                     "): a table header needs a name after its '['");
    toml::table table;
    try {
        table = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
        const toml::source_position& at = e.source().begin;
        return error("configuration file " + source + " is not valid TOML (line " +
                     std::to_string(at.line) + ", column " + std::to_string(at.column) +
                     "): " + std::string(e.description()));
    }
    return apply_table(cfg, table);
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
                    return error("configuration override '" + printable_text(piece) +
                                 "' is not key=value");
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

} // namespace coexec::config
