// Running a program as a child process with a modified environment, for tests.
#pragma once

#include "spawn.hpp"

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace coexec::pocl_testing {

// What to run: argv[0] is a path; `env` entries are set (or, when the value is
// nullopt, removed) on top of the test's own environment.
struct Command {
    std::vector<std::string> argv;
    test_support::EnvChanges env;
};

// How a finished child ended and what it printed.
struct Outcome {
    int exit_code = -1; // -1 when killed by a signal
    std::string out;
    std::string err;
};

// A running child whose stdout and stderr go to files under `scratch_dir`.
class Child {
  public:
    // Starts `command`; throws std::runtime_error if it cannot be started.
    Child(const Command& command, const std::string& scratch_dir);
    // Kills and reaps the child if wait() was not called.
    ~Child();

    pid_t pid() const { return pid_; }
    // Whether the child has ended; it stays to be reaped by wait().
    bool exited() const;
    // Waits for the child to end and collects its output.
    Outcome wait();

    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

  private:
    pid_t pid_ = -1;
    std::string out_path_;
    std::string err_path_;
};

// Runs `command` to completion.
Outcome run(const Command& command, const std::string& scratch_dir);

// The lines of `text`, without their newlines.
std::vector<std::string> lines_of(const std::string& text);

} // namespace coexec::pocl_testing
