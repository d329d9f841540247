// The RML server that coexec gives TBB: workers are coexec threads that run
// TBB's work only while they hold a coexec CPU, and pause (holding none)
// while TBB has nothing for them.
#pragma once

#include "rml_interface.h"

#include <nosv.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <semaphore>
#include <vector>

namespace coexec::tbb_rml {

class Server;

// One TBB worker: a pthread that attaches to coexec with the label "tbb",
// creates its job, alternates between client.process() and nosv_pause(), and
// on close cleans its job up on its own thread.
class Worker {
  public:
    Worker(Server& server, tbb_client& client);
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Starts the thread. False (with errno-style code in the log) on failure.
    bool launch(std::size_t stack_size);

    // Resumes the worker after it paused (or makes its next pause return).
    // Only for workers that the server took off its sleeper list.
    void wake();

    // Reaps the thread: join waits for it to end, detach lets it go.
    void join();
    void detach();

    // The worker running on the calling thread, or nullptr.
    static Worker* current();

  private:
    // pthread_create with `stack` bytes and, unless null, `mask`.
    int create_thread(std::size_t stack, const cpu_set_t* mask);
    static void* thread_main(void* self);
    void run();

    Server& server_;
    tbb_client& client_;
    pthread_t thread_{};
    // Written by the worker before it first puts itself on the sleeper list;
    // read by wakers after taking it off that list (the server's mutex orders both).
    nosv_task_t task_ = nullptr;
    // Where the worker sleeps instead when attaching to coexec failed.
    std::binary_semaphore parking_{0};
};

// Implements tbb_server. Demand accounting follows TBB's own private server:
// `slack` is how many more workers TBB wants running than are running; a
// positive slack wakes sleepers or launches threads, a negative one sends
// workers to sleep as they finish process().
class Server final : public tbb_server {
  public:
    explicit Server(tbb_client& client);
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // --- tbb_server (contracts in rml_interface.h) ----------------------

    version_type version() const override { return server_version; }
    // Wakes and joins every worker (not the caller, nothing while exiting).
    void request_close_connection(bool exiting) override;
    // Hands the CPU to waiting coexec work if any, else a plain sched_yield.
    void yield() override;
    // A hint that TBB 2021 never sends; nothing to do.
    void independent_thread_number_changed(int) override {}
    // nosv_get_num_cpus() - 1, the rule of TBB's own server.
    unsigned default_concurrency() const override;
    // Raises or lowers the slack; raising wakes or launches workers.
    void adjust_job_count_estimate(int delta) override;

    // --- Called by workers ---------------------------------------------

    // True once request_close_connection() started: workers must leave.
    bool closing() const { return closing_.load(std::memory_order_acquire); }
    // True when TBB wants at least as many workers as are running.
    bool has_demand() const { return slack_.load(std::memory_order_acquire) >= 0; }
    // Puts `worker` on the sleeper list if there are too many running.
    // True means the caller must pause until woken.
    bool try_sleep(Worker& worker);
    // Drops one reference; the last one acknowledges the close to TBB and
    // destroys the server. The caller must not touch the server afterwards.
    void release();

  private:
    ~Server() override;
    void wake_some();
    bool wake_one();

    tbb_client& client_;
    const unsigned max_workers_;
    const std::size_t stack_size_;

    std::atomic<int> slack_{0};
    // One reference for the connection plus one per launched worker.
    std::atomic<int> refs_{1};
    // Stored (release) under mutex_; workers poll it (acquire) lock-free,
    // and try_sleep() rereads it under mutex_ before falling asleep.
    std::atomic<bool> closing_{false};

    std::mutex mutex_; // guards sleepers_ and workers_, and orders closing_ with sleeping
    std::vector<Worker*> sleepers_;
    std::vector<std::unique_ptr<Worker>> workers_;
};

} // namespace coexec::tbb_rml
