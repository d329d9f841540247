// Starting a test program as a child process: the one fork/exec that every
// test area's process helpers share.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::test_support {

// Environment changes for a child: a value sets the variable, nullopt unsets it.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

// Starts argv[0] (a path) with this process's environment plus `env`, with
// its stdin, stdout and stderr on `in_fd`, `out_fd` and `err_fd` (-1 keeps
// ours). Everything is prepared before fork, so the child makes only
// async-signal-safe calls; if exec fails it says so on its stderr and exits
// 127. Throws std::runtime_error if argv is empty or fork fails.
pid_t spawn(const std::vector<std::string>& argv, const EnvChanges& env, int in_fd = -1,
            int out_fd = -1, int err_fd = -1);

} // namespace coexec::test_support
