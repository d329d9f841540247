#include "args.hpp"

#include <cerrno>
#include <cstdlib>

namespace bench {

Args::Args(int argc, char** argv, const std::set<std::string>& valued,
           const std::set<std::string>& flags) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) != 0) {
            pos_.push_back(a);
            continue;
        }
        std::string name = a.substr(2);
        if (flags.count(name)) {
            opts_[name] = "1";
        } else if (valued.count(name)) {
            if (i + 1 >= argc) throw UsageError("option " + a + " needs a value");
            opts_[name] = argv[++i];
        } else {
            throw UsageError("unknown option " + a);
        }
    }
}

std::string Args::get(const std::string& name, const std::string& def) const {
    auto it = opts_.find(name);
    return it == opts_.end() ? def : it->second;
}

long Args::get_int(const std::string& name, long def, long lo, long hi) const {
    return has(name) ? parse_int(get(name, ""), "--" + name, lo, hi) : def;
}

std::string Args::get_choice(const std::string& name, const std::string& def,
                             const std::set<std::string>& choices) const {
    std::string v = get(name, def);
    if (!choices.count(v)) {
        std::string all;
        for (const auto& c : choices)
            all += (all.empty() ? "" : "|") + c;
        throw UsageError("--" + name + " must be one of " + all + ", got '" + v + "'");
    }
    return v;
}

long parse_int(const std::string& text, const std::string& what, long lo, long hi) {
    errno = 0;
    char* end = nullptr;
    long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
        throw UsageError(what + " must be an integer in [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "], got '" + text + "'");
    return v;
}

} // namespace bench
