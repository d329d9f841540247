#include "cond_waiters.hpp"

#include "real_pthread.hpp"

#include <new>

namespace coexec::pocl {
namespace {

// Set when nosv_pause() refused this thread (it never should for a thread
// that holds a CPU in a task; this keeps such a thread out of a loop).
thread_local bool pause_failed = false;

} // namespace

CondWaiters& CondWaiters::instance() {
    // Never destroyed: PoCL's workers outlive static destruction (PoCL does
    // not join them at exit) and may still signal.
    static CondWaiters* registry = [] {
        auto* r = new CondWaiters;
        pthread_atfork(nullptr, nullptr, [] { instance().forget_all_in_child(); });
        return r;
    }();
    return *registry;
}

void CondWaiters::forget_all_in_child() {
    // Only the forking thread lives on in the child: the registered waiters
    // are gone, and a bucket lock held across the fork would never be freed.
    for (Bucket& b : buckets_) {
        new (&b.lock) std::mutex;
        b.head = b.tail = nullptr;
    }
    registered_.store(0, std::memory_order_relaxed);
}

bool CondWaiters::pause_works() {
    return !pause_failed;
}

CondWaiters::Bucket& CondWaiters::bucket_of(const pthread_cond_t* cond) {
    // Condition variables are 48 bytes and at least 8-aligned: mix the bits
    // above the alignment.
    const auto key = reinterpret_cast<std::uintptr_t>(cond) >> 3;
    return buckets_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kBucketBits)];
}

void CondWaiters::Bucket::unlink(Waiter* prev, Waiter* n) {
    (prev != nullptr ? prev->next : head) = n->next;
    if (tail == n) tail = prev;
}

void CondWaiters::add(Waiter& w) {
    Bucket& b = bucket_of(w.cond);
    std::lock_guard guard(b.lock);
    (b.tail != nullptr ? b.tail->next : b.head) = &w;
    b.tail = &w;
    registered_.fetch_add(1, std::memory_order_relaxed);
}

bool CondWaiters::remove_if_waiting(Waiter& w) {
    Bucket& b = bucket_of(w.cond);
    std::lock_guard guard(b.lock);
    Waiter* prev = nullptr;
    for (Waiter* n = b.head; n != nullptr; prev = n, n = n->next) {
        if (n != &w) continue;
        b.unlink(prev, n);
        registered_.fetch_sub(1, std::memory_order_relaxed);
        return true;
    }
    return false; // a waker claimed it meanwhile
}

int CondWaiters::wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
    nosv_task_t self = nosv_self();
    Waiter w{cond, self};
    add(w);
    pthread_mutex_unlock(mutex);
    // Submits are banked per task (a submit before a pause pays for it), and
    // other code may submit this task too: libomp's and oneTBB's sleep
    // protocols, or the application. Each pause here consumes one submit.
    // Of the submits the task got meanwhile, one is the waker's (unless the
    // node was withdrawn); banking `pauses - ours` again at the end leaves
    // the count the others made, as if this wait had not been here.
    int pauses = 0;
    bool ours = true; // a waker claimed the node and submits the task once
    for (;;) {
        if (nosv_pause(NOSV_PAUSE_NONE) == NOSV_SUCCESS) {
            ++pauses;
            if (w.state.load(std::memory_order_acquire) == Waiter::kWaiting) continue;
        } else {
            pause_failed = true;
            if (remove_if_waiting(w)) {
                ours = false;
                break;
            }
        }
        // Claimed. Unless kDone already, the waker's submit is under way
        // (this return came from another submit); it must be done before the
        // node goes away, and then stays banked, which the count allows for.
        while (w.state.load(std::memory_order_acquire) != Waiter::kDone)
            kernel_yield();
        break;
    }
    for (int extra = pauses - (ours ? 1 : 0); extra > 0; --extra)
        nosv_submit(self, NOSV_SUBMIT_NONE);
    pthread_mutex_lock(mutex);
    return 0;
}

int CondWaiters::wake(const pthread_cond_t* cond, bool all) {
    // A relaxed load suffices: a waiter registers before it unlocks the
    // caller's mutex, and the signaller changed the predicate under that
    // mutex before it got here, so the registration happens-before this load
    // and coherence makes the load see it (or a later count). A waiter
    // registered after the predicate changed re-checks it before waiting.
    if (registered_.load(std::memory_order_relaxed) == 0) return 0;
    Waiter* claimed = nullptr;
    Waiter** claimed_tail = &claimed;
    int woken = 0;
    {
        Bucket& b = bucket_of(cond);
        std::lock_guard guard(b.lock);
        Waiter* prev = nullptr;
        for (Waiter* n = b.head; n != nullptr;) {
            Waiter* next = n->next;
            if (n->cond != cond) {
                prev = n;
                n = next;
                continue;
            }
            b.unlink(prev, n);
            n->next = nullptr;
            n->state.store(Waiter::kClaimed, std::memory_order_relaxed);
            *claimed_tail = n;
            claimed_tail = &n->next;
            ++woken;
            if (!all) break;
            n = next;
        }
        registered_.fetch_sub(woken, std::memory_order_relaxed);
    }
    // Outside the bucket lock: a submit may hand a CPU over. Each node is
    // read before kDone lets its waiter return and free it.
    for (Waiter* n = claimed; n != nullptr;) {
        Waiter* next = n->next;
        nosv_submit(n->task, NOSV_SUBMIT_NONE);
        n->state.store(Waiter::kDone, std::memory_order_release);
        n = next;
    }
    return woken;
}

} // namespace coexec::pocl
