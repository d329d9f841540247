// The threads the runtime creates (workers, the monitor, the suspension
// timer), counted until each reaches its body, so that fork() can wait for
// them. A thread still starting may hold a lock that its start-up takes:
// ASan before LLVM 18 allocates there and takes no lock around fork(), so a
// child forked at that moment would wait forever on its first allocation.
// Runtime's pthread_atfork prepare handler calls await().
//
// They are created inside a RuntimeSection: std::thread calls
// pthread_create from libstdc++, whose code is not coexec's, and
// libcoexec-host.so's pthread_create would otherwise host them as threads
// of the program's (COEXEC_HOST_THREADS=all; coexec_host_new_thread()).
#pragma once

#include "core/runtime/runtime_section.hpp"

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

namespace coexec::core {

class ThreadStarts {
  public:
    // Starts a thread that runs `body`; throws what std::thread throws.
    template <class Body>
    std::thread launch(Body body) {
        pending_.fetch_add(1, std::memory_order_relaxed);
        const RuntimeSection inside_coexec;
        try {
            return std::thread([this, body = std::move(body)]() mutable {
                started();
                body();
            });
        } catch (...) {
            started(); // it never will
            throw;
        }
    }

    // Returns once every thread launched so far has reached its body.
    void await() const {
        // Acquire pairs with started()'s release: nothing the new threads
        // did before their body is left in flight.
        for (uint32_t n; (n = pending_.load(std::memory_order_acquire)) != 0;)
            pending_.wait(n, std::memory_order_acquire);
    }

  private:
    void started() {
        if (pending_.fetch_sub(1, std::memory_order_release) == 1) pending_.notify_all();
    }

    std::atomic<uint32_t> pending_{0};
};

} // namespace coexec::core
