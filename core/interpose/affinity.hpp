// Affinity transparency: the CPU mask that the threads coexec manages show
// to the program, while coexec pins them to the CPU they hold. See
// docs/affinity.md.
//
// A managed thread (attached, or a worker) has a *visible mask*: the mask
// it had before attach (a worker: the process's mask at nosv_init). The
// libc affinity calls that libcoexec exports (affinity_interpose.cpp)
// answer with it, and a new mask set on such a thread is remembered in its
// place: the kernel affinity stays coexec's, and detach restores the
// remembered mask.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <sys/types.h>
#include <vector>

namespace coexec::core {

struct ThreadContext;

// A managed thread's part; lives in its ThreadContext. `mask` is guarded by
// the registry's mutex; `registered`, `tid` and `pthread` are written by the
// thread itself before it is listed and after it is removed (under the
// mutex), so readers that find the record in the list see them.
struct AffinityRecord {
    pid_t tid = 0;
    pthread_t pthread{};
    cpu_set_t mask{};
    // A mask was remembered that the kernel does not have yet: a thread that
    // keeps its own affinity (COEXEC_ATTACH_KEEP_AFFINITY) gets it the next
    // time it leaves its CPU. Written under the mutex; read by the owner
    // without it (see AffinityRegistry::leave_cpu).
    std::atomic<bool> dirty{false};
    // The thread applied a mask of its own to the kernel while outside
    // coexec (AffinityRegistry::remember with `apply`), which undid coexec's
    // binding of it. Only the thread itself reads and writes it.
    bool applied_outside = false;
    bool registered = false;
};

// Every managed thread of this process, by tid and by pthread_t.
//
// One object per process that lives until the process exits (it is never
// destroyed): the exported sched_getaffinity & co. may run on any thread at
// any time, before nosv_init, during the last nosv_shutdown, in a fork()
// child or from a library destructor, so they must not reach it through the
// Runtime, which shutdown frees. instance() is the one global pointer the
// interposer needs for that; the Runtime holds a reference to the same
// object.
//
// A small mutex, not a lock-free map: affinity calls are rare (libraries
// size their pools once), remote queries must copy a 128-byte mask that
// another thread may be rewriting, and records come and go with threads.
// Attach and detach, worker start and end, and a thread that keeps its
// affinity only when it was pinned or its mask changed, take it; the
// hand-off paths do not.
class AffinityRegistry {
  public:
    // The process's registry, made on first use (thread-safe).
    static AffinityRegistry& instance();
    // The registry if it was made already, else null; never blocks.
    static AffinityRegistry* existing() { return made_.load(std::memory_order_acquire); }

    // False when the kernel's masks do not fit a cpu_set_t (more than 1024
    // possible CPUs): then nothing is registered and every call goes to libc.
    bool enabled() const { return kernel_bytes_ > 0; }
    // How many bytes of a mask the kernel reads and writes (at most a
    // cpu_set_t).
    size_t kernel_bytes() const { return kernel_bytes_ ? kernel_bytes_ : sizeof(cpu_set_t); }

    // Lists the calling thread with `visible` as its mask. When the registry
    // is not enabled the record still keeps the mask for the thread itself
    // (capture_kernel, leave_cpu, remove), but nobody else finds it.
    void add(AffinityRecord& rec, const cpu_set_t& visible);
    // add() with the kernel's mask of the calling thread now (`fallback`
    // when it cannot be read), read under the mutex: a remote set that
    // finds no record reaches the kernel under it too, so it lands either
    // before the read or after the record is listed, never between.
    void add_current(AffinityRecord& rec, const cpu_set_t& fallback);
    // What remove() does with the kernel affinity of the leaving thread.
    enum class Restore {
        no,         // leave it as it is
        yes,        // set it to the remembered mask
        if_changed, // the same, but only if a set is pending (rec.dirty)
    };
    // Unlists the calling thread, restoring its kernel affinity as `how`
    // says first. Under the mutex: a concurrent set is either remembered
    // before and restored, or goes to the kernel after.
    void remove(AffinityRecord& rec, Restore how);
    // Before coexec pins a thread that keeps its own affinity: the visible
    // mask is what the kernel has now, unless a set is still pending.
    void capture_kernel(AffinityRecord& rec);
    // A thread that keeps its own affinity leaves its CPU: unless it was
    // pinned or a set is pending, nothing to do (one atomic load);
    // otherwise its kernel affinity becomes the remembered mask.
    void leave_cpu(AffinityRecord& rec, bool pinned);
    // Drops every record (the runtime is gone).
    void clear();

    // The interposer's part. `self` is the caller's own record (or null);
    // otherwise the thread is looked up by `tid` or `pthread`.
    struct Target {
        AffinityRecord* self = nullptr;     // the calling thread's record
        pid_t tid = 0;                      // else: another thread, by tid ...
        const pthread_t* pthread = nullptr; // ... or by pthread_t
    };
    // Runs fn(record) under the mutex, with the target's record or null
    // when the target is not a managed thread of this process. A call that
    // then goes to libc runs under the mutex too: a thread that registers
    // meanwhile (and is pinned after that) waits for it, so a query never
    // reads coexec's pin and a set never undoes it.
    template <typename Fn>
    decltype(auto) locked(const Target& t, Fn&& fn) {
        std::lock_guard guard(mutex_);
        return fn(find(t));
    }
    // Inside locked(): remembers `mask` (already validated and trimmed to
    // online CPUs) for `rec`. When `apply` (the caller's own thread, outside
    // coexec) the kernel gets it too. Returns 0 or the kernel's errno value.
    int remember(AffinityRecord& rec, const cpu_set_t& mask, bool apply);
    // The online CPUs, for trimming a new mask as the kernel would.
    const cpu_set_t& online() const { return online_; }

    // fork(): the prepare and parent handlers hold the mutex across the
    // fork; in the child the forking thread gets back the visible mask of
    // `forking` (its record in the parent, or null) and the list is emptied.
    void before_fork();
    void after_fork_parent();
    void after_fork_child(AffinityRecord* forking);

  private:
    AffinityRegistry();
    AffinityRecord* find(const Target& t);                    // mutex held
    void list(AffinityRecord& rec, const cpu_set_t& visible); // mutex held

    static std::atomic<AffinityRegistry*> made_;
    std::mutex mutex_;
    std::vector<AffinityRecord*> records_;
    size_t kernel_bytes_ = 0;
    cpu_set_t online_{};
};

// sched_setaffinity(0, sizeof mask, &mask) as libcoexec defines it
// (affinity_interpose.cpp), whatever the lookup order: a managed caller
// remembers the mask as its visible one; for any other thread the call goes
// to the next definition (libc's: the kernel). Returns 0 or the errno
// value.
int set_own_affinity(const cpu_set_t& mask);

// thread_affinity.compat_support (Config::affinity_compat): while off,
// sched_getaffinity and pthread_getaffinity_np show every thread its kernel
// mask, coexec's pin included; sets keep their meaning (a managed thread's
// set is remembered and applied outside coexec). Process-wide, set at init.
void set_affinity_compat(bool on);

} // namespace coexec::core
