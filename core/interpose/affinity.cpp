// The registry of managed threads' visible masks (see affinity.hpp).
#include "core/interpose/affinity.hpp"

#include "scheduler/kernel_affinity.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace coexec::core {

using scheduler::kernel_get_affinity;
using scheduler::kernel_own_affinity;
using scheduler::kernel_set_affinity;

std::atomic<AffinityRegistry*> AffinityRegistry::made_{nullptr};

namespace {

// Parses a kernel CPU list ("0-3,6") into `set`; false if malformed.
bool parse_online(const char* text, cpu_set_t& set) {
    CPU_ZERO(&set);
    const char* p = text;
    bool any = false;
    while (*p && *p != '\n') {
        char* end = nullptr;
        long first = std::strtol(p, &end, 10);
        if (end == p || first < 0) return false;
        long last = first;
        p = end;
        if (*p == '-') {
            last = std::strtol(p + 1, &end, 10);
            if (end == p + 1 || last < first) return false;
            p = end;
        }
        for (long c = first; c <= last && c < CPU_SETSIZE; ++c)
            CPU_SET(size_t(c), &set);
        any = true;
        if (*p == ',') ++p;
    }
    return any;
}

} // namespace

AffinityRegistry& AffinityRegistry::instance() {
    // Made once and never destroyed (see the class comment). The release
    // store pairs with existing()'s acquire: whoever sees the pointer sees
    // the finished object.
    static AffinityRegistry* const registry = [] {
        auto* r = new AffinityRegistry;
        made_.store(r, std::memory_order_release);
        return r;
    }();
    return *registry;
}

AffinityRegistry::AffinityRegistry() {
    // With a cpu_set_t the kernel answers how many bytes its masks have;
    // EINVAL means more possible CPUs than a cpu_set_t holds.
    cpu_set_t probe;
    const long n = kernel_get_affinity(0, sizeof probe, &probe);
    kernel_bytes_ = n > 0 ? size_t(n) : 0;
    records_.reserve(64);
    // A new mask is trimmed to the online CPUs, as the kernel trims it to
    // the active ones (and refuses it when nothing is left).
    bool have_online = false;
    if (std::FILE* f = std::fopen("/sys/devices/system/cpu/online", "re")) {
        char line[4096];
        have_online = std::fgets(line, sizeof line, f) && parse_online(line, online_);
        std::fclose(f);
    }
    if (!have_online) {
        CPU_ZERO(&online_);
        for (size_t c = 0; c < kernel_bytes() * 8 && c < CPU_SETSIZE; ++c)
            CPU_SET(c, &online_);
    }
}

void AffinityRegistry::add(AffinityRecord& rec, const cpu_set_t& visible) {
    std::lock_guard guard(mutex_);
    list(rec, visible);
}

void AffinityRegistry::add_current(AffinityRecord& rec, const cpu_set_t& fallback) {
    std::lock_guard guard(mutex_);
    cpu_set_t own;
    list(rec, kernel_own_affinity(own) ? own : fallback);
}

void AffinityRegistry::list(AffinityRecord& rec, const cpu_set_t& visible) {
    rec.mask = visible;
    rec.dirty.store(false, std::memory_order_relaxed);
    if (!enabled()) return;
    rec.registered = true;
    records_.push_back(&rec);
}

void AffinityRegistry::remove(AffinityRecord& rec, Restore how) {
    std::lock_guard guard(mutex_);
    const bool restore = how == Restore::yes ||
                         (how == Restore::if_changed && rec.dirty.load(std::memory_order_relaxed));
    // A failure (the mask names no CPU the thread may use any more) leaves
    // the thread where coexec had it, as a failed restore always did.
    if (restore) kernel_set_affinity(0, kernel_bytes(), &rec.mask);
    rec.dirty.store(false, std::memory_order_relaxed);
    if (!rec.registered) return;
    rec.registered = false;
    auto it = std::find(records_.begin(), records_.end(), &rec);
    if (it != records_.end()) {
        *it = records_.back();
        records_.pop_back();
    }
}

void AffinityRegistry::capture_kernel(AffinityRecord& rec) {
    std::lock_guard guard(mutex_);
    // A pending set wins over the kernel's mask: the thread applies it the
    // next time it leaves its CPU. Otherwise the kernel's mask is the
    // thread's own (it may have changed it with a raw system call, as
    // libomp does).
    if (rec.dirty.load(std::memory_order_relaxed)) return;
    cpu_set_t now;
    if (kernel_own_affinity(now)) rec.mask = now;
}

void AffinityRegistry::leave_cpu(AffinityRecord& rec, bool pinned) {
    // Relaxed: the flag only decides whether to take the mutex; the mask is
    // read under it. A set that lands after this load is remembered with
    // the flag raised and applied the next time the thread leaves its CPU
    // (a set never has to move a managed thread at once).
    if (!pinned && !rec.dirty.load(std::memory_order_relaxed)) return;
    std::lock_guard guard(mutex_);
    kernel_set_affinity(0, kernel_bytes(), &rec.mask);
    rec.dirty.store(false, std::memory_order_relaxed);
}

void AffinityRegistry::clear() {
    std::lock_guard guard(mutex_);
    for (AffinityRecord* r : records_)
        r->registered = false;
    records_.clear();
}

AffinityRecord* AffinityRegistry::find(const Target& t) {
    if (t.self) return t.self->registered ? t.self : nullptr;
    for (AffinityRecord* r : records_)
        if (t.pthread ? pthread_equal(r->pthread, *t.pthread) != 0 : r->tid == t.tid) return r;
    return nullptr;
}

int AffinityRegistry::remember(AffinityRecord& rec, const cpu_set_t& mask, bool apply) {
    if (apply) {
        // The caller's own thread, outside coexec: the kernel takes the
        // mask now, and a refusal leaves the remembered one as it was.
        if (int err = kernel_set_affinity(0, kernel_bytes(), &mask)) return err;
        rec.mask = mask;
        rec.dirty.store(false, std::memory_order_relaxed);
        rec.applied_outside = true;
        return 0;
    }
    rec.mask = mask;
    // Relaxed: the owner reads the mask under the mutex (see leave_cpu).
    rec.dirty.store(true, std::memory_order_relaxed);
    return 0;
}

void AffinityRegistry::before_fork() {
    mutex_.lock();
}

void AffinityRegistry::after_fork_parent() {
    mutex_.unlock();
}

void AffinityRegistry::after_fork_child(AffinityRecord* forking) {
    // The forking thread holds the mutex (before_fork), and it is the
    // child's only thread: it owns the child's copy and may unlock it. (A
    // new mutex built over the held one would look, to TSan, like a lock
    // that is never released and then taken again.)
    mutex_.unlock();
    // The child is no member of the instance, and its one thread is plain:
    // it runs on the mask it showed, not on the CPU coexec pinned it to.
    if (forking && forking->registered) kernel_set_affinity(0, kernel_bytes(), &forking->mask);
    for (AffinityRecord* r : records_)
        r->registered = false;
    records_.clear();
}

} // namespace coexec::core
