#include "process.hpp"

#include "spawn.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace coexec::clitest {
namespace {

// The CLI tests' convention: an empty value unsets the variable.
test_support::EnvChanges changes(const Env& env) {
    test_support::EnvChanges out;
    for (const auto& [name, value] : env)
        out[name] = value.empty() ? std::nullopt : std::optional<std::string>(value);
    return out;
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
    const pid_t pid = test_support::spawn(argv, changes(env), -1, out[1], err[1]);
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
    // Keep the test's output clean: the worker's report is not needed.
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_ = test_support::spawn(argv, changes(env), -1, null, -1);
    if (null >= 0) close(null);
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
