#include "server.h"

#include "hosted_thread.h"
#include "membership.h"
#include "support/cpu_released.hpp"

#include <coexec/ext.h>
#include <nosv/hwinfo.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace coexec::tbb_rml {

namespace {

// The worker bound to this thread (set for the thread's whole life).
thread_local Worker* tls_worker = nullptr;

// Takes one unit of positive slack; false when there is none.
bool take_slack_unit(std::atomic<int>& slack) {
    int old = slack.load(std::memory_order_acquire);
    // A CAS loop, so two wakers never both take the last unit.
    while (old > 0) {
        if (slack.compare_exchange_weak(old, old - 1, std::memory_order_acq_rel)) return true;
    }
    return false;
}

} // namespace

// ---- Worker ---------------------------------------------------------------

Worker::Worker(Server& server, tbb_client& client) : server_(server), client_(client) {}

Worker* Worker::current() {
    return tls_worker;
}

bool Worker::launch(std::size_t stack_size) {
    // TBB asks for its worker stack size (4 MiB by default); glibc needs a minimum.
    const std::size_t stack = std::max<std::size_t>(stack_size, PTHREAD_STACK_MIN);
    // The creator is usually a master that holds a coexec CPU (master.h) and
    // may be pinned to it; the worker starts from the mask the creator shows,
    // not from that pin.
    cpu_set_t shown;
    const bool have_mask = coexec_visible_affinity(sizeof shown, &shown) == 0;
    int rc = create_thread(stack, have_mask ? &shown : nullptr);
    // The kernel refused that mask (a cpuset changed meanwhile, say): inherit
    // the creator's, as a plain pthread_create does.
    if (rc == EINVAL && have_mask) rc = create_thread(stack, nullptr);
    if (rc != 0) log_line("cannot create a TBB worker thread: %s", std::strerror(rc));
    return rc == 0;
}

int Worker::create_thread(std::size_t stack, const cpu_set_t* mask) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, stack);
    if (mask != nullptr) pthread_attr_setaffinity_np(&attr, sizeof *mask, mask);
    const int rc = pthread_create(&thread_, &attr, &Worker::thread_main, this);
    pthread_attr_destroy(&attr);
    return rc;
}

void* Worker::thread_main(void* self) {
    // Nothing may touch `self` after run(): the last release() frees it.
    static_cast<Worker*>(self)->run();
    return nullptr;
}

void Worker::run() {
    tls_worker = this;
    Server& server = server_;
    const bool attached = nosv_attach(&task_, nullptr, "tbb", NOSV_ATTACH_NONE) == NOSV_SUCCESS;
    if (!attached) {
        // Still serve TBB (it may rely on a worker), sleeping on the semaphore.
        log_line("a TBB worker could not attach to coexec; it runs unmanaged");
        task_ = nullptr;
    }
    set_on_coexec_cpu(attached);

    job* work = client_.create_one_job();
    while (!server.closing()) {
        if (server.has_demand()) {
            client_.process(*work);
            // Between two rounds of TBB work the quantum may hand the CPU on.
            if (attached) nosv_schedpoint(NOSV_SCHEDPOINT_NONE);
        } else if (server.try_sleep(*this)) {
            if (attached)
                nosv_pause(NOSV_PAUSE_NONE);
            else
                parking_.acquire();
        }
    }
    client_.cleanup(*work);
    tls_worker = nullptr;
    set_on_coexec_cpu(false);
    if (attached) nosv_detach(NOSV_DETACH_NONE);
    server.release();
}

void Worker::wake() {
    if (task_ != nullptr)
        nosv_submit(task_, NOSV_SUBMIT_NONE);
    else
        parking_.release();
}

void Worker::join() {
    pthread_join(thread_, nullptr);
}

void Worker::detach() {
    pthread_detach(thread_);
}

// ---- Server ---------------------------------------------------------------

Server::Server(tbb_client& client)
    : client_(client), max_workers_(client.max_job_count()), stack_size_(client.min_stack_size()) {
    TbbMembership::instance().server_created();
}

Server::~Server() {
    TbbMembership::instance().server_destroyed();
}

unsigned Server::default_concurrency() const {
    // Like TBB's own server: every managed CPU but the one of the main thread.
    int cpus = nosv_get_num_cpus();
    if (cpus <= 0) cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return static_cast<unsigned>(cpus - 1);
}

void Server::yield() {
    if (nosv_self() != nullptr && coexec_cpu_wanted())
        nosv_yield(NOSV_YIELD_NONE);
    else
        syscall(SYS_sched_yield);
}

void Server::adjust_job_count_estimate(int delta) {
    // Lock-free: a worker that misses a concurrent change only runs one more
    // round of process() (which finds no work) or goes to sleep and is woken
    // by the wake_some() that follows every raise; try_sleep() and wake_one()
    // decide under the mutex, so no sleeper is stranded while slack > 0.
    slack_.fetch_add(delta, std::memory_order_acq_rel);
    if (delta > 0) wake_some();
}

void Server::wake_some() {
    while (take_slack_unit(slack_)) {
        if (!wake_one()) {
            // Nobody to wake and no thread left to create: keep the demand
            // so that running workers stay busy.
            slack_.fetch_add(1, std::memory_order_acq_rel);
            return;
        }
    }
}

bool Server::wake_one() {
    Worker* sleeper = nullptr;
    {
        std::lock_guard lock(mutex_);
        if (closing_.load(std::memory_order_relaxed)) return false;
        if (!sleepers_.empty()) {
            sleeper = sleepers_.back();
            sleepers_.pop_back();
        } else if (workers_.size() < max_workers_) {
            auto worker = std::make_unique<Worker>(*this, client_);
            // The worker's own reference. Relaxed: taken before the thread
            // exists, and the connection's reference keeps refs_ above zero.
            refs_.fetch_add(1, std::memory_order_relaxed);
            if (!worker->launch(stack_size_)) {
                refs_.fetch_sub(1, std::memory_order_relaxed);
                return false;
            }
            workers_.push_back(std::move(worker));
            return true;
        } else {
            return false;
        }
    }
    // Outside the lock: a submit may hand over the CPU at once.
    sleeper->wake();
    return true;
}

bool Server::try_sleep(Worker& worker) {
    std::lock_guard lock(mutex_);
    // Checked under the lock: request_close_connection() drains the sleeper
    // list under the same lock, so no worker can fall asleep after it.
    if (closing_.load(std::memory_order_relaxed)) return false;
    int old = slack_.load(std::memory_order_acquire);
    // Give back one unit of oversubscription; a CAS because adjust() may
    // raise the slack concurrently, and then the worker must stay awake.
    while (old < 0) {
        if (slack_.compare_exchange_weak(old, old + 1, std::memory_order_acq_rel)) {
            sleepers_.push_back(&worker);
            return true;
        }
    }
    return false;
}

void Server::request_close_connection(bool exiting) {
    std::vector<Worker*> sleepers;
    std::vector<Worker*> all;
    {
        std::lock_guard lock(mutex_);
        closing_.store(true, std::memory_order_release);
        sleepers.swap(sleepers_);
        for (auto& worker : workers_)
            all.push_back(worker.get());
    }
    for (Worker* sleeper : sleepers)
        sleeper->wake();
    // Join like TBB's own server so that a blocking terminate really waits,
    // except for the calling worker itself and during exit(), where the
    // threads may be stuck in work that never ends.
    Worker* self = Worker::current();
    {
        adapter::CpuReleased released; // while it waits in pthread_join
        for (Worker* worker : all) {
            if (exiting || worker == self)
                worker->detach();
            else
                worker->join();
        }
    }
    release();
}

void Server::release() {
    // acq_rel: the thread that drops the last reference must see everything
    // the other workers did before they dropped theirs.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    tbb_client& client = client_;
    delete this;
    // TBB destroys its market here; the server must already be gone.
    client.acknowledge_close_connection();
}

} // namespace coexec::tbb_rml
