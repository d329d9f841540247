#include "subprocess.hpp"

#include "spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace coexec::pocl_testing {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string unique_path(const std::string& dir, const char* suffix) {
    static std::atomic<int> counter{0};
    return dir + "/child-" + std::to_string(getpid()) + "-" +
           std::to_string(counter.fetch_add(1, std::memory_order_relaxed)) + suffix;
}

} // namespace

Child::Child(const Command& command, const std::string& scratch_dir)
    : out_path_(unique_path(scratch_dir, ".out")), err_path_(unique_path(scratch_dir, ".err")) {
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0 || err < 0)
        throw std::runtime_error("cannot create output files in " + scratch_dir);
    pid_ = test_support::spawn(command.argv, command.env, -1, out, err);
    close(out);
    close(err);
}

Child::~Child() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
}

bool Child::exited() const {
    siginfo_t info{};
    // WNOWAIT: a look only, wait() still reaps it.
    return waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid_;
}

Outcome Child::wait() {
    Outcome outcome;
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    outcome.out = slurp(out_path_);
    outcome.err = slurp(err_path_);
    unlink(out_path_.c_str());
    unlink(err_path_.c_str());
    return outcome;
}

Outcome run(const Command& command, const std::string& scratch_dir) {
    return Child(command, scratch_dir).wait();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

} // namespace coexec::pocl_testing
