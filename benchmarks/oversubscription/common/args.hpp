// Command-line parsing shared by the benchmarks: positional integers and `--name value`
// options, with clear errors for bad input.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

// Thrown for any malformed command line; main() prints it with the usage and exits 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Splits argv into positionals and options. `flags` lists options that take no value;
// every other `--name` must be followed by a value. Unknown names are rejected.
class Args {
  public:
    Args(int argc, char** argv, const std::set<std::string>& valued,
         const std::set<std::string>& flags);

    const std::vector<std::string>& positional() const { return pos_; }
    bool has(const std::string& name) const { return opts_.count(name) != 0; }
    // The option's value, or `def` when absent.
    std::string get(const std::string& name, const std::string& def) const;
    // The option's value as an integer in [lo, hi], or `def` when absent.
    long get_int(const std::string& name, long def, long lo, long hi) const;
    // The value as one of `choices`, or `def` when absent.
    std::string get_choice(const std::string& name, const std::string& def,
                           const std::set<std::string>& choices) const;

  private:
    std::vector<std::string> pos_;
    std::map<std::string, std::string> opts_;
};

// Parses `text` as an integer in [lo, hi]; `what` names it in the error.
long parse_int(const std::string& text, const std::string& what, long lo, long hi);

} // namespace bench
