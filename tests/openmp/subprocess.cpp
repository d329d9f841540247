#include "subprocess.hpp"

#include "spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace coexec::test {
namespace {

std::string temp_file() {
    std::string path = "/tmp/coexec-omp-test-XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    return path;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env)
    : out_path_(temp_file()), err_path_(temp_file()) {
    const int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int out = open(out_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    const int err = open(err_path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (in < 0 || out < 0 || err < 0)
        throw std::runtime_error("cannot open the child's output files");
    pid_ =
        test_support::spawn(argv, test_support::EnvChanges(env.begin(), env.end()), in, out, err);
    close(in);
    close(out);
    close(err);
}

Subprocess::~Subprocess() {
    if (!reaped_) kill_and_reap();
    unlink(out_path_.c_str());
    unlink(err_path_.c_str());
}

void Subprocess::kill_and_reap() {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
    reaped_ = true;
    // libomp removes its registration file in /dev/shm only when it exits.
    const std::string mark = "__KMP_REGISTERED_LIB_" + std::to_string(pid_) + "_";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec))
        if (entry.path().filename().string().starts_with(mark))
            std::filesystem::remove(entry.path(), ec);
}

bool Subprocess::wait_for_line(const std::string& line, std::chrono::milliseconds patience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    for (;;) {
        for (const std::string& l : lines(slurp(out_path_)))
            if (l == line) return true;
        if (!running() || std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

bool Subprocess::running() {
    if (!reaped_ && waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return !reaped_;
}

ProcessResult Subprocess::wait(std::chrono::milliseconds timeout) {
    ProcessResult result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!reaped_) {
        result.timed_out = true;
        kill_and_reap();
    }
    if (WIFEXITED(status_)) result.exit_code = WEXITSTATUS(status_);
    result.out = slurp(out_path_);
    result.err = slurp(err_path_);
    return result;
}

ProcessResult run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env,
                  std::chrono::milliseconds timeout) {
    Subprocess p(argv, env);
    return p.wait(timeout);
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(line);
    return out;
}

} // namespace coexec::test
