// A child process with piped stdin/stdout/stderr and bounded waits, so that a
// test that would deadlock fails with a message instead of hanging.
#pragma once

#include "spawn.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::tbb_test {

// How a child ended.
struct Outcome {
    bool timed_out = false; // killed by us after the deadline
    int exit_code = -1;     // valid when it exited normally
    int signal = 0;         // nonzero when a signal ended it
    std::string out;
    std::string err;
};

// Environment changes for a child: a value sets the variable, nullopt unsets it.
using EnvChanges = test_support::EnvChanges;

class ChildProcess {
  public:
    // Starts argv[0] (a path) with the current environment plus `env`.
    // Throws std::runtime_error if it cannot be started.
    ChildProcess(const std::vector<std::string>& argv, const EnvChanges& env);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    pid_t pid() const { return pid_; }

    // Reads stdout until a line equal to `line` arrives; false on EOF or timeout.
    bool wait_for_line(const std::string& line, std::chrono::milliseconds timeout);

    // Closes the child's stdin (the "please finish" signal of some scenarios).
    void close_stdin();

    // Collects the rest of the output and the exit status; kills the child
    // (SIGKILL) if it has not ended within `timeout`.
    Outcome finish(std::chrono::milliseconds timeout);

  private:
    bool pump(std::chrono::steady_clock::time_point deadline);

    pid_t pid_ = -1;
    int in_fd_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::string out_;
    std::string err_;
    size_t scanned_ = 0;
    bool reaped_ = false;
};

// Runs a command to completion (see ChildProcess::finish).
Outcome run_command(const std::vector<std::string>& argv, const EnvChanges& env,
                    std::chrono::milliseconds timeout);

} // namespace coexec::tbb_test
