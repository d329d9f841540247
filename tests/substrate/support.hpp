// Helpers shared by the substrate tests: private segment names, forked
// children with deadlines, and memory shared with them.
#pragma once

#include "shm/liveness.hpp"
#include "shm/segment.hpp"

#include <gtest/gtest.h>
#include <nosv.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace coexec::test {

// Gives the test its own segment: sets NOSV_CONFIG_OVERRIDE (inherited by
// forked children) and removes the segment at the end.
class ScopedSegment {
  public:
    explicit ScopedSegment(const std::string& extra = "") {
        static int counter = 0;
        // Built from chars and appends: `"t" + std::string` and assigning
        // "t" both trip a false -Wrestrict in gcc 12 at -O2.
        name_ = std::string(1, 't').append(std::to_string(::getpid())).append(1, 'x');
        name_ += std::to_string(counter++);
        std::string ov = "shared_memory.name=" + name_;
        if (!extra.empty()) ov += "," + extra;
        ::setenv("NOSV_CONFIG_OVERRIDE", ov.c_str(), 1);
    }
    ~ScopedSegment() {
        std::string msg;
        shm::SegmentMapping::unlink(options(), msg);
        ::unsetenv("NOSV_CONFIG_OVERRIDE");
    }
    const std::string& name() const { return name_; }
    shm::SegmentOptions options() const {
        shm::SegmentOptions o;
        o.name = name_;
        o.create = false;
        return o;
    }
    // Maps the segment (it must exist).
    shm::SegmentMapping map() const {
        shm::SegmentError e;
        auto m = shm::SegmentMapping::open(options(), e);
        EXPECT_TRUE(m) << e.message;
        return m;
    }

  private:
    std::string name_;
};

// The CPUs this process may run on (its affinity mask), system ids.
inline std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &mask)) cpus.push_back(c);
    return cpus;
}

// Memory shared with forked children, zero-initialised.
template <typename T>
class Shared {
  public:
    Shared() {
        void* p =
            ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) std::abort();
        ptr_ = new (p) T{};
    }
    ~Shared() {
        ptr_->~T();
        ::munmap(ptr_, sizeof(T));
    }
    Shared(const Shared&) = delete;
    Shared& operator=(const Shared&) = delete;
    T* operator->() const { return ptr_; }
    T& operator*() const { return *ptr_; }

  private:
    T* ptr_;
};

// Runs `body` in a forked child whose exit status is body's return value.
inline pid_t fork_child(const std::function<int()>& body) {
    pid_t pid = ::fork();
    if (pid == 0) {
        int rc = 99;
        try {
            rc = body();
        } catch (...) {
            rc = 98;
        }
        std::_Exit(rc);
    }
    return pid;
}

// A program outside coexec that spins on kernel CPU `cpu` until the guard
// ends it (a CPU hog). Forked: start it before the test's instance, so it
// is not a member.
class Spinner {
  public:
    explicit Spinner(int cpu) {
        pid_ = fork_child([cpu] {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof one, &one) != 0) return 1;
            volatile bool spin = true;
            while (spin) {
            }
            return 0;
        });
    }
    ~Spinner() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    Spinner(const Spinner&) = delete;
    Spinner& operator=(const Spinner&) = delete;

  private:
    pid_t pid_;
};

// Waits for `pid`; kills it after `timeout`. Returns the exit code, or
// 128+signal, or -1 on timeout.
inline int wait_child(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    for (;;) {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -2;
}

// Runs a member of the test's segment that joins, attaches (so it holds a
// CPU) and dies by SIGKILL. Returns wait_child()'s status: 128 + SIGKILL
// when it died so, 11 when it could not join.
inline int run_member_killed_while_attached() {
    return wait_child(fork_child([] {
        nosv_task_t t;
        if (nosv_init() != 0 || nosv_attach(&t, nullptr, "x", 0) != 0) return 11;
        ::raise(SIGKILL);
        return 0;
    }));
}

// The kernel's affinity of thread `tid` (0: the caller), read with the
// system call: libcoexec's sched_getaffinity & co. show a managed thread's
// own mask instead (docs/affinity.md).
inline cpu_set_t kernel_affinity(pid_t tid = 0) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    EXPECT_GT(::syscall(SYS_sched_getaffinity, tid, sizeof mask, &mask), 0);
    return mask;
}

inline uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

// Joins a private instance for one test; attaches the test thread.
class Instance {
  public:
    explicit Instance(const std::string& extra = "", bool attach = true) : seg_(extra) {
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
        if (attach) {
            EXPECT_EQ(nosv_attach(&main_, nullptr, "test", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        }
    }
    ~Instance() {
        if (main_) {
            EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
        }
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    }
    nosv_task_t main() const { return main_; }

  private:
    test::ScopedSegment seg_;
    nosv_task_t main_ = nullptr;
};

// How long a test waits for something a correct run does at once: far
// beyond any correct run, so that only a hang reaches it.
inline constexpr auto kPatience = std::chrono::seconds(20);

// Waits, from outside any task, until `done()` or `patience` (kPatience
// unless the awaited event is itself due later) passed.
template <class Done>
bool wait_until(Done done, std::chrono::nanoseconds patience = kPatience) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

// Waits, from outside any task, until thread `tid` of this process sleeps
// in the kernel (it is neither running nor runnable), or kPatience passed.
inline bool wait_until_asleep(pid_t tid) {
    return wait_until([tid] { return !shm::thread_on_cpu(::getpid(), tid); });
}

// Waits, from outside any task, until `done()`, or until `progress()` (a
// count that only grows) stood still for kPatience: a long exchange on a
// loaded machine may take longer than kPatience, a stopped one never moves.
template <class Done, class Progress>
bool wait_while_moving(Done done, Progress progress) {
    auto last = progress();
    auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!done()) {
        const auto now = std::chrono::steady_clock::now();
        if (auto p = progress(); p != last) {
            last = p;
            deadline = now + kPatience;
        } else if (now > deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return true;
}

// Waits, from an attached task, until `done()` or kPatience passed. The
// task sleeps off its CPU between looks (nosv_waitfor), so what it waits
// for can run there; a sleep in the OS would keep the CPU, and the
// process's tasks would run only at each look.
template <class Done>
bool yield_until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        EXPECT_EQ(nosv_waitfor(100'000, nullptr), NOSV_SUCCESS);
    }
    return true;
}

} // namespace coexec::test
