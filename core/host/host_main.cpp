// Hosting the program's main thread: with COEXEC_HOST_THREADS=main or all
// (what `coexec run` sets unless the variable is set), this library's
// constructor attaches the thread that loads it, the main thread, before
// the program's own constructors and main(). Whatever the program computes
// on it (serial code, a BLAS call that opens no parallel region, an
// interpreter) then runs on a CPU coexec grants, not beside the threads it
// hosts. The thread gives its CPU away where it blocks in the C library
// (blocking_interpose.cpp), and is detached at exit. With all, the threads
// the program starts are hosted too (hosted_threads.cpp).
#include "core/host/host_mode.hpp"
#include "core/interpose/host_calls.h"

#include <atomic>

#include <coexec/ext.h>
#include <nosv.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

// A program that must never be hosted (the coexec CLI: `coexec ps` run
// under `coexec run` is not a member) defines this symbol. Weak: null in
// every other program.
extern "C" {
__attribute__((weak)) extern const int coexec_never_host_threads;
}

namespace coexec::host {
namespace {

// The hosted main thread's id: exit() called from another thread leaves
// the main thread to the runtime's exit path.
pid_t g_main_tid = 0;

// Set once by the constructor, before the program starts any thread
// (pthread_create orders it for every thread), so relaxed reads see it.
std::atomic<HostMode> g_mode{HostMode::none};

// Threads the program started that are attached now.
std::atomic<int> g_started_attached{0};

// Set for good once a thread the program started runs unhosted. Relaxed:
// a yield that reads it late treats that thread as hosted for one more
// call, which costs that thread a few microseconds at most.
std::atomic<bool> g_some_unhosted{false};

bool verbose() {
    const char* v = std::getenv("COEXEC_VERBOSE");
    return v && *v && std::strcmp(v, "0") != 0;
}

void detach_main_at_exit() {
    if (g_main_tid == 0 || ::gettid() != g_main_tid) return;
    g_main_tid = 0;
    if (coexec_host_take_lent_asleep()) coexec_block_exit();
    coexec_unhost_this_thread();
    nosv_detach(NOSV_DETACH_NONE);
    // Threads the program started may still run (a daemon thread, one
    // blocked for good): the runtime they use stays until the process
    // ends, and leaves the instance on libcoexec's exit path, as a process
    // that exits without nosv_shutdown() does.
    if (g_started_attached.load(std::memory_order_acquire) == 0) nosv_shutdown();
}

HostMode parse_mode(const char* value) {
    if (!value || !*value || std::strcmp(value, "none") == 0) return HostMode::none;
    if (std::strcmp(value, "main") == 0) return HostMode::main;
    if (std::strcmp(value, "all") == 0) return HostMode::all;
    std::fprintf(stderr,
                 "coexec: COEXEC_HOST_THREADS=%s is not one of none, main and all; "
                 "the program's threads are not hosted\n",
                 value);
    return HostMode::none;
}

void host_main_thread() {
    if (&coexec_never_host_threads != nullptr) return;
    const HostMode mode = parse_mode(std::getenv("COEXEC_HOST_THREADS"));
    if (mode == HostMode::none) return;
    // Preloaded, this library is loaded by the main thread; a program that
    // dlopen()s it from another thread gets nothing hosted.
    if (::gettid() != ::getpid()) return;
    if (coexec_init_quiet() != NOSV_SUCCESS) {
        if (verbose())
            std::fprintf(stderr, "coexec: main thread not hosted: %s\n", coexec_last_error());
        return;
    }
    nosv_task_t task = nullptr;
    // Bound to the CPU it holds, as a worker is: a mask the program sets is
    // what the thread shows and what the threads it starts get
    // (docs/affinity.md), and no waits of its own pay for affinity calls.
    int err = nosv_attach(&task, nullptr, "main", NOSV_ATTACH_NONE);
    if (err == NOSV_SUCCESS && (err = coexec_host_this_thread()) != NOSV_SUCCESS)
        nosv_detach(NOSV_DETACH_NONE);
    if (err != NOSV_SUCCESS) {
        if (verbose())
            std::fprintf(stderr, "coexec: main thread not hosted: %s\n",
                         nosv_get_error_string(err));
        nosv_shutdown();
        return;
    }
    g_main_tid = ::gettid();
    g_mode.store(mode, std::memory_order_relaxed);
    // Registered after the exit handlers of the libraries loaded before it
    // (libcoexec's), so it runs before them; libraries that load later (the
    // adapters') run theirs first and find the thread still attached, as a
    // thread someone else attached.
    std::atexit(detach_main_at_exit);
}

__attribute__((constructor)) void host_at_load() {
    host_main_thread();
}

} // namespace

HostMode host_mode() {
    return g_mode.load(std::memory_order_relaxed);
}

void hosted_thread_started() {
    g_started_attached.fetch_add(1, std::memory_order_relaxed);
}

bool every_program_thread_hosted() {
    return host_mode() == HostMode::all && !g_some_unhosted.load(std::memory_order_relaxed);
}

void program_thread_unhosted() {
    g_some_unhosted.store(true, std::memory_order_relaxed);
}

void hosted_thread_ended() {
    // Release: the main thread's exit that reads 0 comes after the detach.
    g_started_attached.fetch_sub(1, std::memory_order_release);
}

} // namespace coexec::host
