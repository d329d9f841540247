#include "process.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace coexec::clitest {
namespace {

// Applies `env` and execs argv in the (forked) child; never returns.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const Env& env) {
    for (const auto& [name, value] : env) {
        if (value.empty())
            unsetenv(name.c_str());
        else
            setenv(name.c_str(), value.c_str(), 1);
    }
    std::vector<char*> args;
    for (const auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "cannot exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
}

int decode_status(int wstatus, bool& signaled) {
    signaled = WIFSIGNALED(wstatus);
    return signaled ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
}

// Reads both pipes until they close or the deadline passes.
bool drain(int out_fd, int err_fd, Outcome& o, std::chrono::steady_clock::time_point deadline) {
    pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    std::string* sinks[2] = {&o.out, &o.err};
    int open_fds = 2;
    while (open_fds > 0) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        int n = poll(fds, 2, int(left.count()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buf[4096];
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                sinks[i]->append(buf, size_t(got));
            } else {
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    return true;
}

} // namespace

Outcome run_process(const std::vector<std::string>& argv, const Env& env,
                    std::chrono::milliseconds timeout) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        exec_child(argv, env);
    }
    close(out[1]);
    close(err[1]);
    Outcome o;
    o.timed_out = !drain(out[0], err[0], o, std::chrono::steady_clock::now() + timeout);
    if (o.timed_out) ::kill(pid, SIGKILL);
    close(out[0]);
    close(err[0]);
    int wstatus = 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    o.status = decode_status(wstatus, o.signaled);
    return o;
}

Background::Background(const std::vector<std::string>& argv, const Env& env) {
    pid_ = fork();
    if (pid_ == 0) {
        // Keep the test's output clean: the worker's report is not needed.
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        exec_child(argv, env);
    }
}

void Background::kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

Background::~Background() {
    kill();
}

} // namespace coexec::clitest
