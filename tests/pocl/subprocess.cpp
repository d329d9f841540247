#include "subprocess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace coexec::pocl_testing {
namespace {

std::vector<std::string> child_environment(const Command& command) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string entry(*e);
        auto eq = entry.find('=');
        if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (const auto& [name, value] : command.env) {
        if (value)
            env[name] = *value;
        else
            env.erase(name);
    }
    std::vector<std::string> out;
    for (const auto& [name, value] : env)
        out.push_back(name + "=" + value);
    return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

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
    // Everything the child needs is prepared before fork: only async-signal-
    // safe calls happen between fork and exec.
    std::vector<std::string> args = command.argv, env = child_environment(command);
    std::vector<char*> argv = c_strings(args), envp = c_strings(env);
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0 || err < 0)
        throw std::runtime_error("cannot create output files in " + scratch_dir);
    pid_ = fork();
    if (pid_ == 0) {
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        execve(argv[0], argv.data(), envp.data());
        _exit(127);
    }
    close(out);
    close(err);
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
}

Child::~Child() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
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
