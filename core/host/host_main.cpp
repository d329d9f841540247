// Hosting the program's main thread: with COEXEC_HOST_THREADS=main (what
// `coexec run` sets unless the variable is set), this library's constructor
// attaches the thread that loads it, the main thread, before the program's
// own constructors and main(). Whatever the program computes on it (serial
// code, a BLAS call that opens no parallel region, an interpreter) then
// runs on a CPU coexec grants, not beside the threads it hosts. The thread
// gives its CPU away where it blocks in the C library
// (blocking_interpose.cpp), and is detached at exit.
#include "core/interpose/host_calls.h"

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
    nosv_shutdown();
}

void host_main_thread() {
    if (&coexec_never_host_threads != nullptr) return;
    const char* value = std::getenv("COEXEC_HOST_THREADS");
    if (!value || !*value || std::strcmp(value, "none") == 0) return;
    if (std::strcmp(value, "main") != 0) {
        std::fprintf(stderr,
                     "coexec: COEXEC_HOST_THREADS=%s is not one of none and main; "
                     "the program's threads are not hosted\n",
                     value);
        return;
    }
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
} // namespace coexec::host
