// Runs a program as a child process for the OpenMP adapter tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace coexec::test {

// What a finished child left behind.
struct ProcessResult {
    int exit_code = -1;     // -1 when it did not exit normally
    bool timed_out = false; // killed after the deadline
    std::string out;        // stdout
    std::string err;        // stderr
};

// A child process started with extra environment variables; its output goes
// to temporary files so it can never block on a full pipe. The destructor
// kills a child that is still running (and cleans up after its libomp).
class Subprocess {
  public:
    Subprocess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
    ~Subprocess();
    Subprocess(const Subprocess&) = delete;
    Subprocess& operator=(const Subprocess&) = delete;

    pid_t pid() const { return pid_; }
    // True while the child has not been reaped.
    bool running();
    // Waits up to `timeout`, then kills the child; returns its result.
    ProcessResult wait(std::chrono::milliseconds timeout);
    // Waits until the child's stdout has a line `line` (true), or it exited,
    // or `patience` ran out (false). The child must flush its lines.
    bool wait_for_line(const std::string& line, std::chrono::milliseconds patience);

  private:
    // SIGKILL, reap, and remove what a killed libomp leaves in /dev/shm.
    void kill_and_reap();

    pid_t pid_ = -1;
    int status_ = 0;
    bool reaped_ = false;
    std::string out_path_;
    std::string err_path_;
};

// Starts a child and waits for it (see Subprocess::wait).
ProcessResult run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env,
                  std::chrono::milliseconds timeout = std::chrono::seconds(60));

// The non-empty lines of `text`.
std::vector<std::string> lines(const std::string& text);

} // namespace coexec::test
