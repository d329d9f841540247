// libcoexec's side of hosting program threads (program_threads.hpp,
// host_calls.h): which thread is hosted, which code the wrappers of
// libcoexec-host.so leave alone, and the thread-local state they share with
// the preemption handler.
#include "core/interpose/program_threads.hpp"

#include "core/interpose/forwarded_call.hpp"
#include "core/interpose/host_calls.h"

#include "core/runtime/runtime.hpp"
#include "core/runtime/thread_context.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <dlfcn.h>
#include <link.h>
#include <mutex>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <unistd.h>

namespace coexec::core {
namespace {

// Set by the thread itself once it is attached, cleared before it detaches.
// initial-exec: read on every blocking call the program makes.
thread_local bool t_hosted __attribute__((tls_model("initial-exec"))) = false;

// This process hosts its main thread. Set once, in the constructor, after
// the code ranges below are written and before the program starts any
// thread (pthread_create orders both for every thread it starts), so
// relaxed reads see them.
std::atomic<bool> g_hosting{false};

// The thread lent its CPU from its signal handler while it slept where no
// wrapper saw it (program_thread_lent_asleep()). Written by the handler and
// read by the thread itself (a compiler fence orders them).
thread_local bool t_lent_asleep __attribute__((tls_model("initial-exec"))) = false;

// The executable code whose blocking calls the wrappers leave alone: that
// of libcoexec and of the adapters' libraries (every object under a
// `coexec/` directory: <libdir>/coexec/<adapter>/), found when the main
// thread is hosted (`coexec run` preloads them all), and that of the
// runtime libraries whose waits an adapter manages itself, which it names
// later (coexec_leave_blocking_calls_from(): PoCL's, which the OpenCL
// loader opens on first use). Append-only: a range is written under
// g_code_mutex before the count that publishes it is stored (release);
// readers load the count (acquire) and read only the ranges below it.
struct CodeRange {
    uintptr_t begin, end;
};
constexpr int kMaxCodeRanges = 64;
CodeRange g_coexec_code[kMaxCodeRanges];
std::atomic<int> g_coexec_code_count{0};
std::mutex g_code_mutex;

// The objects to note: the one loaded from `path`, and with `adapters` also
// every object under a `coexec/` directory.
struct ObjectQuery {
    const char* path = "";
    bool adapters = false;
};

void add_code_range(uintptr_t begin, uintptr_t end) {
    const int n = g_coexec_code_count.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i)
        if (g_coexec_code[i].begin == begin) return; // named before
    if (n == kMaxCodeRanges) return;                 // only a wrapper that stays in effect
    g_coexec_code[n] = {begin, end};
    g_coexec_code_count.store(n + 1, std::memory_order_release);
}

int note_code(dl_phdr_info* info, size_t, void* data) {
    const auto& q = *static_cast<const ObjectQuery*>(data);
    const char* name = info->dlpi_name ? info->dlpi_name : "";
    const bool wanted =
        std::strcmp(name, q.path) == 0 || (q.adapters && std::strstr(name, "/coexec/") != nullptr);
    if (!wanted) return 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
        add_code_range(begin, begin + ph.p_memsz);
    }
    return 0;
}

void find_coexec_code() {
    Dl_info self{};
    if (!dladdr(reinterpret_cast<const void*>(&find_coexec_code), &self) || !self.dli_fname) return;
    const ObjectQuery q{self.dli_fname, true};
    std::lock_guard guard(g_code_mutex);
    dl_iterate_phdr(note_code, const_cast<ObjectQuery*>(&q));
}

} // namespace

namespace {

bool from_coexec_code(const void* caller) {
    const auto at = reinterpret_cast<uintptr_t>(caller);
    const int n = g_coexec_code_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i)
        if (at >= g_coexec_code[i].begin && at < g_coexec_code[i].end) return true;
    return false;
}

bool take_lent_asleep() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!t_lent_asleep) return false;
    t_lent_asleep = false;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return true;
}

} // namespace

void program_thread_lent_asleep() {
    t_lent_asleep = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

} // namespace coexec::core

using namespace coexec::core;

#define COEXEC_HOST_API extern "C" __attribute__((visibility("default")))

COEXEC_HOST_API int coexec_leave_blocking_calls_from(const void* address) {
    Dl_info info{};
    if (!address || !dladdr(address, &info) || !info.dli_fname) return NOSV_ERR_INVALID_PARAMETER;
    const ObjectQuery q{info.dli_fname, false};
    std::lock_guard guard(g_code_mutex);
    dl_iterate_phdr(note_code, const_cast<ObjectQuery*>(&q));
    return NOSV_SUCCESS;
}

COEXEC_HOST_API int coexec_host_this_thread(void) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    ThreadContext* self = this_thread_context();
    if (!self || !self->attach.attached) return NOSV_ERR_OUTSIDE_TASK;
    find_coexec_code();
    rt->preemption().host_program_thread(*self);
    t_hosted = true;
    g_hosting.store(true, std::memory_order_relaxed);
    // A fork() child is not a member (Runtime forgets the instance there):
    // its copy of this thread is a plain thread.
    static std::once_flag at_fork;
    std::call_once(at_fork, [] {
        pthread_atfork(nullptr, nullptr, [] {
            t_hosted = false;
            t_lent_asleep = false;
        });
    });
    return NOSV_SUCCESS;
}

COEXEC_HOST_API void coexec_unhost_this_thread(void) {
    RuntimeSection section;
    t_hosted = false;
    Runtime* rt = Runtime::get();
    if (ThreadContext* self = rt ? this_thread_context() : nullptr)
        rt->preemption().unhost_program_thread(*self);
}

COEXEC_HOST_API int coexec_host_call(const void* caller) {
    // Inside coexec (runtime_depth()), or from coexec's or an adapter's
    // code: theirs to manage.
    if (runtime_depth() != 0 || !g_hosting.load(std::memory_order_relaxed) ||
        from_coexec_code(caller))
        return 0;
    int kinds = t_hosted ? COEXEC_HOST_PROGRAM : 0;
    const ThreadContext* self = this_thread_context();
    if (self && self->work.current && (self->held.cpu != coexec::shm::kNone || t_lent_asleep))
        kinds |= COEXEC_HOST_LOCKER;
    return kinds;
}

COEXEC_HOST_API int coexec_host_new_thread(const void* caller) {
    return runtime_depth() == 0 && g_hosting.load(std::memory_order_relaxed) && caller &&
                   !from_coexec_code(caller)
               ? 1
               : 0;
}

COEXEC_HOST_API int coexec_host_reclaim_cpu(void) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    ThreadContext* self = rt ? this_thread_context() : nullptr;
    return self && self->work.current && rt->handover().reclaim_cpu(*self) ? 1 : 0;
}

COEXEC_HOST_API int coexec_host_take_lent_asleep(void) {
    return take_lent_asleep() ? 1 : 0;
}

COEXEC_HOST_API const void** coexec_host_caller_slot(void) {
    return &forwarded_caller();
}
