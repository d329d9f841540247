// Running the coexec CLI and demo workers as real child processes.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::clitest {

// What a finished command did. `status` is its exit code, or 128+signal
// when a signal ended it (so a crash never passes as a clean exit).
struct Outcome {
    int status = -1;
    bool signaled = false;
    bool timed_out = false;
    std::string out;
    std::string err;
};

// Extra environment for a child: name -> value (an empty value unsets).
using Env = std::map<std::string, std::string>;

// Runs argv[0] (a path) with `env` on top of ours, captures both streams,
// and kills it (SIGKILL) if it outlives `timeout`.
Outcome run_process(const std::vector<std::string>& argv, const Env& env = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A child left running in the background; SIGKILLed and reaped when
// destroyed unless waited for.
class Background {
  public:
    Background(const std::vector<std::string>& argv, const Env& env);
    ~Background();
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    pid_t pid() const { return pid_; }
    // Sends SIGKILL and reaps the child.
    void kill();

  private:
    pid_t pid_ = -1;
};

} // namespace coexec::clitest
