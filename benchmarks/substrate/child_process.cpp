#include "child_process.hpp"

#include <sys/mman.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace coexec::bench {

void* map_shared_anonymous(size_t bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
    return p;
}

void unmap_shared(void* p, size_t bytes) {
    ::munmap(p, bytes);
}

ChildGroup::~ChildGroup() {
    kill_all();
}

void ChildGroup::spawn(const std::function<int()>& body) {
    std::fflush(nullptr); // the child must not write the parent's buffered output again
    pid_t pid = ::fork();
    if (pid < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid == 0) {
        int rc = body();
        std::fflush(nullptr);
        ::_exit(rc); // skip the parent's atexit handlers and static destructors
    }
    pids_.push_back(pid);
}

namespace {
std::string describe(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return "stopped";
}
} // namespace

std::string ChildGroup::wait_all(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string failure;
    while (!pids_.empty() && failure.empty()) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid > 0 && std::find(pids_.begin(), pids_.end(), pid) != pids_.end()) {
            std::erase(pids_, pid);
            if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                failure = "child " + std::to_string(pid) + " " + describe(status);
            continue;
        }
        if (pid < 0 && errno != EINTR)
            failure = std::string("waitpid: ") + std::strerror(errno);
        else if (std::chrono::steady_clock::now() >= deadline)
            failure = "timed out after " + std::to_string(timeout.count()) + " s (hung?)";
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    kill_all();
    return failure;
}

void ChildGroup::kill_all() {
    for (pid_t pid : pids_)
        ::kill(pid, SIGKILL);
    for (pid_t pid : pids_)
        ::waitpid(pid, nullptr, 0);
    pids_.clear();
}

} // namespace coexec::bench
