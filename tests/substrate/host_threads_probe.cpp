// A program whose main thread coexec hosts (run with COEXEC_HOST_THREADS=main
// and libcoexec-host.so preloaded), blocking in one of the C library's calls until
// another process has run on the segment's CPU:
//
//     host-threads-probe OP GO_FD [started]
//
// With `started` (run with COEXEC_HOST_THREADS=all), a thread that the main
// thread starts makes the call, hosted too, while the main thread waits in
// pthread_join: every thread the probe starts is then a coexec thread.
//
// GO_FD is the read end of a pipe that the other process writes one byte to
// once it holds a CPU. OP names the call the main thread blocks in; for the
// calls that wait for another thread, a plain thread of the probe reads the
// pipe and then lets the main thread through. On a one-CPU segment the
// other process gets the CPU only if the call gave it away.
//
// `spin_for_own_task` needs no other process (GO_FD is not read): the main
// thread spins until a task of its own process ran. Neither do the
// `yields_*` operations: the thread calls sched_yield 100 times, and the
// call succeeds when every one (`yields_reach_kernel`), none
// (`yields_stay_in_coexec`), at least one (`yields_may_reach_kernel`) or at
// most ten (`yields_back_off`) reached the definition after
// libcoexec-host.so's (kernel_yield_counter.cpp, preloaded after it).
// `idle_spin_naps` neither: see idle_spin_naps().
//
// Exit status: 0 when the calling thread was hosted before the call and
// still is after it, 2 for bad arguments, 3 when it is not hosted, 4 when
// the call failed.
#include <nosv.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <functional>
#include <linux/futex.h>
#include <map>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <string>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

int g_go = -1;

// What a plain thread waits for: the other process's byte.
void await_go() {
    char c;
    while (::read(g_go, &c, 1) < 0 && errno == EINTR) {
    }
}

// Runs `release` on a plain thread once the other process ran, while the
// main thread blocks in `block`; true when `block` succeeded.
bool with_helper(const std::function<void()>& release, const std::function<bool()>& block) {
    std::thread helper([&] {
        await_go();
        release();
    });
    const bool ok = block();
    helper.join();
    return ok;
}

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
pthread_rwlock_t g_rwlock = PTHREAD_RWLOCK_INITIALIZER;
bool g_flag = false;
std::atomic<bool> g_done{false};

bool cond_wait(bool timed) {
    return with_helper(
        [] {
            pthread_mutex_lock(&g_mutex);
            g_flag = true;
            pthread_cond_signal(&g_cond);
            pthread_mutex_unlock(&g_mutex);
        },
        [timed] {
            pthread_mutex_lock(&g_mutex);
            int rc = 0;
            while (!g_flag && (rc == 0 || rc == ETIMEDOUT)) {
                if (!timed) {
                    rc = pthread_cond_wait(&g_cond, &g_mutex);
                } else {
                    timespec at;
                    clock_gettime(CLOCK_REALTIME, &at);
                    at.tv_sec += 1;
                    rc = pthread_cond_timedwait(&g_cond, &g_mutex, &at);
                }
            }
            pthread_mutex_unlock(&g_mutex);
            return g_flag;
        });
}

// A plain thread holds a lock (`hold`, `release`) until the other process
// ran, while the main thread waits to take it (`take`, `release`).
template <typename Hold, typename Take, typename Release>
bool held_by_helper(Hold hold, Take take, Release release) {
    std::atomic<bool> held{false};
    std::thread helper([&] {
        hold();
        held = true;
        await_go();
        release();
    });
    while (!held)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const bool ok = take() == 0;
    if (ok) release();
    helper.join();
    return ok;
}

bool mutex_lock() {
    return held_by_helper([] { pthread_mutex_lock(&g_mutex); },
                          [] { return pthread_mutex_lock(&g_mutex); },
                          [] { pthread_mutex_unlock(&g_mutex); });
}

bool rwlock_rdlock() {
    return held_by_helper([] { pthread_rwlock_wrlock(&g_rwlock); },
                          [] { return pthread_rwlock_rdlock(&g_rwlock); },
                          [] { pthread_rwlock_unlock(&g_rwlock); });
}

bool semaphore() {
    sem_t sem;
    sem_init(&sem, 0, 0);
    const bool ok = with_helper([&] { sem_post(&sem); }, [&] { return sem_wait(&sem) == 0; });
    sem_destroy(&sem);
    return ok;
}

bool join() {
    pthread_t t;
    auto body = [](void*) -> void* {
        await_go();
        return nullptr;
    };
    return pthread_create(&t, nullptr, body, nullptr) == 0 && pthread_join(t, nullptr) == 0;
}

bool barrier() {
    pthread_barrier_t b;
    pthread_barrier_init(&b, nullptr, 2);
    const bool ok = with_helper([&] { pthread_barrier_wait(&b); },
                                [&] {
                                    const int rc = pthread_barrier_wait(&b);
                                    return rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD;
                                });
    pthread_barrier_destroy(&b);
    return ok;
}

// Sleeps in `nap` until the helper saw the other process run.
bool sleeps(const std::function<void()>& nap) {
    return with_helper([] { g_done = true; },
                       [&] {
                           while (!g_done)
                               nap();
                           return true;
                       });
}

bool sockets(bool listen_and_accept) {
    if (!listen_and_accept) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
        char c = 0;
        const bool ok = with_helper([&] { (void)!::send(sv[1], "x", 1, 0); },
                                    [&] { return ::recv(sv[0], &c, 1, 0) == 1; });
        ::close(sv[0]);
        ::close(sv[1]);
        return ok;
    }
    const int srv = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    // An abstract address: nothing to remove afterwards.
    std::snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "coexec-probe-%d", ::getpid());
    const socklen_t len = sizeof(sa_family_t) + 1 + std::strlen(addr.sun_path + 1);
    if (srv < 0 || ::bind(srv, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(srv, 1) != 0)
        return false;
    int client = -1;
    const bool ok = with_helper(
        [&] {
            client = ::socket(AF_UNIX, SOCK_STREAM, 0);
            (void)!::connect(client, reinterpret_cast<sockaddr*>(&addr), len);
        },
        [&] {
            const int c = ::accept(srv, nullptr, nullptr);
            if (c >= 0) ::close(c);
            return c >= 0;
        });
    if (client >= 0) ::close(client);
    ::close(srv);
    return ok;
}

// Sleeps where no wrapper sees it, in a raw futex system call, until the
// helper saw the other process run: only the monitor, which finds the
// thread asleep on its CPU, can lend that CPU.
bool raw_futex() {
    static std::atomic<int> word{0};
    return with_helper(
        [] {
            word.store(1);
            ::syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
        },
        [] {
            // A signal's EINTR, or a wake-up before the store: look again.
            while (word.load() == 0)
                ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
            return true;
        });
}

bool child_wait() {
    const pid_t child = ::fork();
    if (child == 0) {
        await_go();
        std::_Exit(0);
    }
    int status = 0;
    return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status);
}

// The main thread spins in user code, with no call at all, until a task of
// its own process has run: on a one-CPU segment the task gets the CPU only
// if the preemption safety net takes it from the main thread.
std::atomic<bool> g_task_ran{false};

bool spin_for_own_task() {
    nosv_task_type_t type;
    nosv_task_t task;
    if (nosv_init() != 0) return false;
    auto run = [](nosv_task_t) { g_task_ran = true; };
    if (nosv_type_init(&type, run, nullptr, nullptr, "probe-task", nullptr, nullptr,
                       NOSV_TYPE_INIT_NONE) != 0 ||
        nosv_create(&task, type, 0, NOSV_CREATE_NONE) != 0 ||
        nosv_submit(task, NOSV_SUBMIT_NONE) != 0)
        return false;
    while (!g_task_ran.load(std::memory_order_relaxed)) {
    }
    // The task has run; it completes on its own.
    return nosv_shutdown() == 0;
}

// How many of 100 sched_yield calls reached the counting definition
// preloaded after libcoexec-host.so; -1 when it is not loaded.
int kernel_yields_of_100() {
    auto* count =
        static_cast<std::atomic<int>*>(::dlsym(RTLD_DEFAULT, "coexec_test_kernel_yields"));
    if (count == nullptr) return -1;
    const int before = count->load();
    for (int i = 0; i < 100; ++i)
        ::sched_yield();
    return count->load() - before;
}

// The thread spins on sched_yield while a thread it starts works in 50 us
// pieces with a yield after each, both on the segment's one CPU. A spin
// that naps leaves the worker's yields nothing to hand the CPU to; one that
// queued for the CPU at every yield would take a turn at each of them. True
// when, over the worker's last 1,000 pieces (the spin is 50 ms old by
// then), the spinner took fewer than 250 turns.
bool idle_spin_naps() {
    constexpr int kPieces = 2000;
    std::atomic<long> spins{0};
    std::atomic<bool> done{false};
    long spins_at_half = 0;
    std::thread worker([&] {
        for (int i = 0; i < kPieces; ++i) {
            if (i == kPieces / 2) spins_at_half = spins.load(std::memory_order_relaxed);
            const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
            while (std::chrono::steady_clock::now() < until) {
            }
            ::sched_yield();
        }
        done.store(true, std::memory_order_relaxed);
    });
    while (!done.load(std::memory_order_relaxed)) {
        ::sched_yield();
        spins.fetch_add(1, std::memory_order_relaxed);
    }
    worker.join();
    const long turns = spins.load() - spins_at_half;
    std::printf("idle_spin_naps: %ld turns of the spinner in %d pieces of the worker\n", turns,
                kPieces / 2);
    return turns < 250;
}

const std::map<std::string, std::function<bool()>>& operations() {
    static const std::map<std::string, std::function<bool()>> ops{
        {"pthread_cond_wait", [] { return cond_wait(false); }},
        {"pthread_cond_timedwait", [] { return cond_wait(true); }},
        {"pthread_mutex_lock", mutex_lock},
        {"pthread_rwlock_rdlock", rwlock_rdlock},
        {"sem_wait", semaphore},
        {"pthread_join", join},
        {"pthread_barrier_wait", barrier},
        {"nanosleep",
         [] {
             return sleeps([] {
                 timespec t{0, 2'000'000};
                 ::nanosleep(&t, nullptr);
             });
         }},
        {"clock_nanosleep",
         [] {
             return sleeps([] {
                 timespec t{0, 2'000'000};
                 ::clock_nanosleep(CLOCK_MONOTONIC, 0, &t, nullptr);
             });
         }},
        {"usleep", [] { return sleeps([] { ::usleep(2000); }); }},
        {"poll",
         [] {
             pollfd p{g_go, POLLIN, 0};
             return ::poll(&p, 1, -1) == 1;
         }},
        {"select",
         [] {
             fd_set r;
             FD_ZERO(&r);
             FD_SET(g_go, &r);
             return ::select(g_go + 1, &r, nullptr, nullptr, nullptr) == 1;
         }},
        {"epoll_wait",
         [] {
             const int ep = ::epoll_create1(0);
             epoll_event e{};
             e.events = EPOLLIN;
             if (ep < 0 || ::epoll_ctl(ep, EPOLL_CTL_ADD, g_go, &e) != 0) return false;
             const bool ok = ::epoll_wait(ep, &e, 1, -1) == 1;
             ::close(ep);
             return ok;
         }},
        {"read",
         [] {
             char c;
             return ::read(g_go, &c, 1) == 1;
         }},
        {"recv", [] { return sockets(false); }},
        {"accept", [] { return sockets(true); }},
        {"waitpid", child_wait},
        {"raw_futex", raw_futex},
        {"spin_for_own_task", spin_for_own_task},
        {"yields_reach_kernel", [] { return kernel_yields_of_100() == 100; }},
        {"yields_stay_in_coexec", [] { return kernel_yields_of_100() == 0; }},
        {"yields_may_reach_kernel", [] { return kernel_yields_of_100() > 0; }},
        {"yields_back_off", [] { return kernel_yields_of_100() <= 10; }},
        {"idle_spin_naps", idle_spin_naps},
    };
    return ops;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
        for (const auto& [name, op] : operations())
            std::printf("%s\n", name.c_str());
        return 0;
    }
    const bool started = argc == 4 && std::strcmp(argv[3], "started") == 0;
    if ((argc != 3 && !started) || !operations().count(argv[1])) {
        std::fprintf(stderr, "usage: host-threads-probe OP GO_FD [started] (OPs: --list)\n");
        return 2;
    }
    g_go = std::atoi(argv[2]);
    if (!nosv_self()) return 3;
    const auto& op = operations().at(argv[1]);
    auto call = [&op] {
        if (!nosv_self()) return 3;
        if (!op()) return 4;
        return nosv_self() ? 0 : 3;
    };
    if (!started) return call();
    int status = 2;
    std::thread caller([&] { status = call(); });
    caller.join();
    return status;
}
