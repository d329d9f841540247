// Joining and leaving the shared instance.
#include "runtime.hpp"

#include "shm/clock.hpp"
#include "shm/futex.hpp"
#include "shm/liveness.hpp"

#include <cstdio>
#include <cstring>
#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

std::atomic<Runtime*> Runtime::instance_{nullptr};

namespace {

// Nesting of nosv_init/nosv_shutdown, and why the last init failed; both
// guarded by init_mutex(). Part of the one per-process runtime state.
int g_nesting = 0;
std::string g_last_error;

std::mutex& init_mutex() {
    static std::mutex m;
    return m;
}

constexpr uint64_t kMonitorPeriodNs = 20'000'000; // how often to look for dead processes
// A CPU kept outside coexec (coexec_keep_cpu) is taken for waiting work only
// after two looks of the monitor at least this far apart saw the same period:
// short serial stretches between parallel regions keep their CPU.
constexpr uint64_t kKeptGraceNs = 1'000'000;
constexpr uint64_t kReapIntervalNs = 40'000'000;

std::string process_name() {
    char name[17] = {};
    prctl(PR_GET_NAME, name, 0, 0, 0);
    return name;
}

void warn(const std::string& text) {
    std::fprintf(stderr, "coexec: %s\n", text.c_str());
}

// Formats the CPU table of a fresh (or reclaimed) segment.
void format_cpus(Segment& s, const std::vector<scheduler::CpuInfo>& cpus) {
    std::vector<int> numa_ids;
    for (auto& c : cpus)
        if (std::find(numa_ids.begin(), numa_ids.end(), c.system_numa) == numa_ids.end())
            numa_ids.push_back(c.system_numa);
    std::sort(numa_ids.begin(), numa_ids.end());
    s.header.cpu_count = int(cpus.size());
    s.header.numa_count = int(numa_ids.size());
    for (size_t i = 0; i < cpus.size(); ++i) {
        CpuSlot& slot = s.cpus[i];
        slot.system_id = cpus[i].system_id;
        slot.core = cpus[i].core;
        slot.system_numa = cpus[i].system_numa;
        slot.numa = int(std::find(numa_ids.begin(), numa_ids.end(), cpus[i].system_numa) -
                        numa_ids.begin());
        slot.state.store(CpuState::Free, std::memory_order_relaxed);
        slot.owner_proc.store(kNone, std::memory_order_relaxed);
        slot.owner_thread.store(kNone, std::memory_order_relaxed);
        slot.turn_proc.store(kNone, std::memory_order_relaxed);
        slot.preempt_asked_ns.store(0, std::memory_order_relaxed);
        slot.stint_proc = kNone;
    }
    s.header.unheld_cpus.store(int(cpus.size()), std::memory_order_seq_cst);
    s.header.wakeable_cpus.store(int(cpus.size()), std::memory_order_seq_cst);
}

void format_config(Segment& s, const Config& c) {
    s.header.config.quantum_ns = c.quantum_ns;
    s.header.config.preempt_after_ns = c.preempt_after_ns;
    s.header.config.governor_policy = uint32_t(c.governor);
    s.header.config.governor_spins = c.governor_spins;
}

// After fork() the child is not a member of the instance: it forgets the
// parent's runtime without touching the segment, and may nosv_init anew.
void forget_after_fork() {
    g_nesting = 0;
    this_thread_context() = nullptr;
    new (&init_mutex()) std::mutex;
}

} // namespace

ThreadContext*& this_thread_context() {
    // initial-exec: read on every spin of a re-hosted wait loop
    // (coexec_cpu_wanted); one pointer fits glibc's static TLS reserve even
    // when libcoexec is dlopen()ed.
    thread_local ThreadContext* ctx __attribute__((tls_model("initial-exec"))) = nullptr;
    return ctx;
}

int Runtime::logical_cpu(int system_id) const {
    for (size_t i = 0; i < cpu_system_ids_.size(); ++i)
        if (cpu_system_ids_[i] == system_id) return int(i);
    return -1;
}

int Runtime::logical_numa(int system_id) const {
    for (size_t i = 0; i < numa_system_ids_.size(); ++i)
        if (numa_system_ids_[i] == system_id) return int(i);
    return -1;
}

const char* Runtime::last_error() {
    std::lock_guard guard(init_mutex());
    return g_last_error.c_str();
}

void Runtime::fail_reason(const std::string& why, bool quiet) {
    g_last_error = why; // init_mutex() is held by init()
    if (!quiet) warn(why);
}

int Runtime::init(bool quiet) {
    std::lock_guard guard(init_mutex());
    g_last_error.clear();
    if (g_nesting > 0) {
        ++g_nesting;
        return NOSV_SUCCESS;
    }
    static std::once_flag fork_handler;
    std::call_once(fork_handler, [] {
        pthread_atfork(nullptr, nullptr, [] {
            instance_.store(nullptr, std::memory_order_relaxed);
            forget_after_fork();
        });
    });
    std::unique_ptr<Runtime> rt(new Runtime);
    int rc = rt->start(quiet);
    if (rc != NOSV_SUCCESS) return rc;
    instance_.store(rt.release(), std::memory_order_release);
    g_nesting = 1;
    return NOSV_SUCCESS;
}

int Runtime::shutdown() {
    std::lock_guard guard(init_mutex());
    if (g_nesting == 0) return NOSV_ERR_NOT_INITIALIZED;
    if (--g_nesting > 0) return NOSV_SUCCESS;
    Runtime* rt = instance_.load(std::memory_order_acquire);
    rt->stop();
    instance_.store(nullptr, std::memory_order_release);
    delete rt;
    return NOSV_SUCCESS;
}

int Runtime::start(bool quiet) {
    ConfigResult cr = load_config(config_);
    for (auto& w : cr.warnings)
        warn(w);
    if (!cr.ok) {
        fail_reason(cr.error, quiet);
        return NOSV_ERR_INVALID_PARAMETER;
    }
    std::vector<scheduler::CpuInfo> cpus;
    std::string topo_error;
    if (!scheduler::discover_cpus(config_.binding, cpus, topo_error)) {
        fail_reason(topo_error, quiet);
        return NOSV_ERR_INVALID_PARAMETER;
    }
    if (cpus.size() > size_t(kMaxCpus)) cpus.resize(size_t(kMaxCpus));

    SegmentOptions options;
    options.name = config_.shm_name;
    options.isolation = config_.isolation;
    options.initialize = [&](Segment& s) {
        format_cpus(s, cpus);
        format_config(s, config_);
    };
    SegmentError error;
    mapping_ = SegmentMapping::open(options, error);
    if (!mapping_) {
        fail_reason(error.message, quiet);
        return error.kind == SegmentError::Kind::Permission ? NOSV_ERR_INVALID_OPERATION
                                                            : NOSV_ERR_UNKNOWN;
    }
    Segment& s = *mapping_.get();
    sched_ = std::make_unique<scheduler::SharedScheduler>(s);
    by_slot_.assign(size_t(kMaxThreads), nullptr);

    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        sched_->reap_dead(wakes);
        if (sched_->empty()) {
            // Nobody is left: reclaim the segment with this process's view.
            format_cpus(s, cpus);
            format_config(s, config_);
        }
        proc_ =
            sched_->register_process(::getpid(), process_start_time(::getpid()), process_name());
    }
    wakes.flush(s);
    if (proc_ == kNone) {
        fail_reason("the shared segment has no free process slot (" + std::to_string(kMaxProcs) +
                        " in use)",
                    quiet);
        return NOSV_ERR_OUT_OF_MEMORY;
    }
    for (int c = 0; c < s.header.cpu_count; ++c)
        cpu_system_ids_.push_back(s.cpus[c].system_id);
    for (int c = 0; c < s.header.cpu_count; ++c)
        if (std::find(numa_system_ids_.begin(), numa_system_ids_.end(), s.cpus[c].system_numa) ==
            numa_system_ids_.end())
            numa_system_ids_.push_back(s.cpus[c].system_numa);
    std::sort(numa_system_ids_.begin(), numa_system_ids_.end());
    queue_ = std::make_unique<ReadyQueue>(s.procs[proc_], cpu_count(), numa_count());
    external_type_.label = "attached";
    external_type_.external = true;
    external_type_.magic = kTypeMagic;
    install_preemption();
    kept_seen_.assign(size_t(segment()->header.cpu_count), {});
    monitor_ = std::thread([this] { monitor_main(); });
    return NOSV_SUCCESS;
}

// Watches for processes that died holding CPUs, and for work of ours that
// no CPU picked up (a submit racing a CPU going idle).
void Runtime::monitor_main() {
    Segment& s = *segment();
    ProcSlot& me = s.procs[proc_];
    while (!stopping_.load(std::memory_order_acquire)) {
        uint32_t seq = me.monitor_word.load(std::memory_order_acquire);
        futex_wait(me.monitor_word, seq, kMonitorPeriodNs);
        if (stopping_.load(std::memory_order_acquire)) break;
        uint64_t now = now_ns();
        bool want_cpu = me.ready_total.load(std::memory_order_relaxed) > 0;
        bool reap_due =
            now - s.header.last_reap_ns.load(std::memory_order_relaxed) >= kReapIntervalNs;
        if (want_cpu && s.header.unheld_cpus.load(std::memory_order_relaxed) == 0) {
            ask_overdue_holders();
            take_long_kept_cpus(now);
        }
        if (!want_cpu || (!reap_due && s.header.unheld_cpus.load(std::memory_order_relaxed) == 0))
            continue;
        ensure_receiver();
        WakeList wakes;
        {
            auto lock = sched_->lock(wakes);
            if (reap_due) sched_->reap_dead(wakes);
            sched_->distribute_free(wakes);
            sched_->claim_unheld_cpu(proc_, {}, wakes);
        }
        wakes.flush(s);
    }
}

void Runtime::take_long_kept_cpus(uint64_t now) {
    for (int32_t c = 0; c < int32_t(kept_seen_.size()); ++c) {
        KeptSighting& seen = kept_seen_[size_t(c)];
        uint32_t word = 0;
        const int32_t t = sched_->keeping_holder(c, word);
        if (t == kNone || t != seen.thread || word != seen.word) {
            // A new period (or none): look again next time.
            seen = t == kNone ? KeptSighting{} : KeptSighting{t, word, now};
            continue;
        }
        if (now - seen.since_ns < kKeptGraceNs) continue;
        WakeList wakes;
        {
            auto lock = sched_->lock(wakes);
            sched_->take_kept(c, t, word);
        }
        wakes.flush(*segment());
        seen = {};
    }
}

void Runtime::stop() {
    Segment& s = *segment();
    if (ThreadContext* self = this_thread_context(); self && self->attached) detach(*self, true);
    stopping_.store(true, std::memory_order_release);
    s.procs[proc_].preemptible.store(0, std::memory_order_relaxed);
    // Nobody may grant our pool threads a CPU any more.
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        s.procs[proc_].pool_head = kNone;
        s.procs[proc_].pool_size.store(0, std::memory_order_relaxed);
    }
    wakes.flush(s);
    s.procs[proc_].monitor_word.fetch_add(1, std::memory_order_release);
    futex_wake(s.procs[proc_].monitor_word);
    monitor_.join();
    std::vector<std::unique_ptr<ThreadContext>> workers;
    {
        std::lock_guard guard(workers_mutex_);
        workers.swap(workers_);
    }
    for (auto& w : workers) {
        ThreadSlot& th = s.threads[w->slot];
        th.word.fetch_add(1, std::memory_order_release);
        futex_wake(th.word);
    }
    // A worker still inside a paused task is let go without a CPU (the
    // task was never resumed: the program's error) and finishes on its own.
    for (auto& w : workers)
        w->thread.join();
    {
        auto lock = sched_->lock(wakes);
        sched_->unregister_process(proc_, wakes);
    }
    wakes.flush(s);
    // The last process out takes the segment's name with it: nothing stays
    // in /dev/shm once an instance is done.
    mapping_.remove_if_last();
}

Runtime::~Runtime() = default;

} // namespace coexec::core
