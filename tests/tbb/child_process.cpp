#include "child_process.h"

#include "spawn.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace coexec::tbb_test {

namespace {

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

} // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const EnvChanges& env) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe failed");
    pid_ = test_support::spawn(argv, env, in[0], out[1], err[1]);
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    in_fd_ = in[1];
    out_fd_ = out[0];
    err_fd_ = err[0];
}

ChildProcess::~ChildProcess() {
    if (!reaped_ && pid_ > 0) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    close_fd(in_fd_);
    close_fd(out_fd_);
    close_fd(err_fd_);
}

bool ChildProcess::pump(std::chrono::steady_clock::time_point deadline) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const int ready = poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return false;
    bool any_open = false;
    int* fd_refs[2] = {&out_fd_, &err_fd_};
    std::string* sinks[2] = {&out_, &err_};
    for (int i = 0; i < 2; ++i) {
        if (*fd_refs[i] < 0) continue;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buffer[4096];
            const ssize_t n = ::read(*fd_refs[i], buffer, sizeof buffer);
            if (n > 0)
                sinks[i]->append(buffer, static_cast<size_t>(n));
            else if (n == 0 || errno != EINTR)
                close_fd(*fd_refs[i]);
        }
        any_open = any_open || *fd_refs[i] >= 0;
    }
    return any_open;
}

bool ChildProcess::wait_for_line(const std::string& line, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        size_t end;
        while ((end = out_.find('\n', scanned_)) != std::string::npos) {
            const bool match = out_.compare(scanned_, end - scanned_, line) == 0;
            scanned_ = end + 1;
            if (match) return true;
        }
        if (out_fd_ < 0 || !pump(deadline)) return false;
    }
}

void ChildProcess::close_stdin() {
    close_fd(in_fd_);
}

Outcome ChildProcess::finish(std::chrono::milliseconds timeout) {
    Outcome outcome;
    close_stdin();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while ((out_fd_ >= 0 || err_fd_ >= 0) && pump(deadline)) {
    }
    int status = 0;
    for (;;) {
        const pid_t done = waitpid(pid_, &status, WNOHANG);
        if (done == pid_) break;
        if (std::chrono::steady_clock::now() >= deadline) {
            outcome.timed_out = true;
            ::kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            break;
        }
        usleep(2000);
    }
    reaped_ = true;
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
    outcome.out = out_;
    outcome.err = err_;
    return outcome;
}

Outcome run_command(const std::vector<std::string>& argv, const EnvChanges& env,
                    std::chrono::milliseconds timeout) {
    ChildProcess child(argv, env);
    return child.finish(timeout);
}

} // namespace coexec::tbb_test
