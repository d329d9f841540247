#include "checker.hpp"

#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

namespace coexec::torture {

using namespace coexec::shm;
constexpr auto rlx = std::memory_order_relaxed;

// ---- Timeline ----------------------------------------------------------

void Timeline::stopped(uint64_t now) {
    std::lock_guard guard(mu_);
    if (stopped_now_++ == 0) stopped_since_ = now;
}

void Timeline::continued(uint64_t now) {
    std::lock_guard guard(mu_);
    if (stopped_now_ > 0 && --stopped_now_ == 0) stopped_total_ += now - stopped_since_;
}

uint64_t Timeline::stopped_ns_locked(uint64_t now) const {
    return stopped_total_ + (stopped_now_ > 0 && now > stopped_since_ ? now - stopped_since_ : 0);
}

uint64_t Timeline::stopped_ns(uint64_t now) const {
    std::lock_guard guard(mu_);
    return stopped_ns_locked(now);
}

void Timeline::died(pid_t pid, uint64_t start_time, int serial, uint64_t now) {
    std::lock_guard guard(mu_);
    deaths_[{pid, start_time}] = Death{serial, now, stopped_ns_locked(now)};
}

std::optional<Timeline::Death> Timeline::death_of(pid_t pid, uint64_t start_time) const {
    std::lock_guard guard(mu_);
    auto it = deaths_.find({pid, start_time});
    if (it == deaths_.end()) return std::nullopt;
    return it->second;
}

// ---- Checker -----------------------------------------------------------

Checker::Checker(Segment& segment, const Timeline& timeline, uint32_t min_ms, uint32_t max_ms,
                 uint32_t lost_ms, uint64_t seed)
    : s_(segment), timeline_(timeline), min_ms_(min_ms), max_ms_(std::max(min_ms, max_ms)),
      lost_ns_(uint64_t(lost_ms) * 1'000'000), seed_(seed) {}

Checker::~Checker() {
    stop();
}

void Checker::start() {
    stop_.store(false, rlx);
    thread_ = std::thread([this] { loop(); });
}

void Checker::stop() {
    stop_.store(true, rlx);
    if (thread_.joinable()) thread_.join();
}

void Checker::loop() {
    std::mt19937_64 rng(seed_);
    while (!stop_.load(rlx)) {
        const uint32_t ms = min_ms_ + uint32_t(rng() % (max_ms_ - min_ms_ + 1));
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        if (stop_.load(rlx)) break;
        check_once();
    }
}

void Checker::check_once() {
    scheduler::SharedScheduler sched(s_);
    scheduler::WakeList wakes;
    std::vector<std::string> found;
    std::string dump;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        found = scheduler::check_invariants(s_);
        scan_dead_holders(now_ns(), found);
        if (!found.empty() && !dumped_) {
            dump = dump_segment(s_);
            dumped_ = true;
        }
    }
    // A repair done by our lock (a member died in it) may have granted CPUs.
    wakes.flush(s_);
    checks_.fetch_add(1, rlx);
    if (found.empty()) return;
    failed_checks_.fetch_add(1, rlx);
    record(found);
    if (!dump.empty()) std::printf("segment at the first violation:\n%s", dump.c_str());
    std::fflush(stdout);
}

bool Checker::wanted(int cpu) const {
    const scheduler::SharedScheduler sched(s_);
    const int n = std::clamp(s_.header.alive_count, 0, kMaxProcs);
    for (int i = 0; i < n; ++i) {
        const int32_t p = s_.header.alive[i];
        if (p < 0 || p >= kMaxProcs) continue;
        const ProcSlot& proc = s_.procs[p];
        if (!timeline_.death_of(proc.pid, proc.start_time) && sched.policy().has_work(p, cpu))
            return true;
    }
    return false;
}

void Checker::scan_dead_holders(uint64_t now, std::vector<std::string>& found) {
    const uint64_t stopped_now = timeline_.stopped_ns(now);
    const int cpus = std::clamp(s_.header.cpu_count, 0, kMaxCpus);
    for (int c = 0; c < cpus; ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        const int32_t p = cpu.owner_proc.load(rlx);
        // Only a Running CPU keeps others out; an idle or lent one is theirs
        // to claim.
        if (p < 0 || p >= kMaxProcs || cpu.state.load(rlx) != CpuState::Running) continue;
        const ProcSlot& proc = s_.procs[p];
        auto death = timeline_.death_of(proc.pid, proc.start_time);
        if (!death) continue;
        // Time since the death, and since the last scan, without stops.
        const auto without_stops = [&](uint64_t from, uint64_t stopped_from) {
            const uint64_t span = now > from ? now - from : 0;
            const uint64_t stopped = stopped_now - stopped_from;
            return span > stopped ? span - stopped : 0;
        };
        const uint64_t held = without_stops(death->died_ns, death->stopped_ns_before);
        const bool since_death = prev_scan_ns_ < death->died_ns;
        const uint64_t step = since_death ? held : without_stops(prev_scan_ns_, prev_stopped_ns_);
        uint64_t& wanted_for = wanted_hold_ns_[{c, proc.pid}];
        if (wanted(c)) wanted_for += step;
        for (auto [max, value] :
             {std::pair{&max_dead_hold_ns_, held}, std::pair{&max_wanted_hold_ns_, wanted_for}}) {
            uint64_t prev = max->load(rlx);
            while (value > prev && !max->compare_exchange_weak(prev, value, rlx)) {
            }
        }
        if (wanted_for <= lost_ns_) continue;
        std::lock_guard guard(mu_);
        if (!lost_.insert({c, proc.pid}).second) continue;
        found.push_back("CPU " + std::to_string(c) + " is still Running for member #" +
                        std::to_string(death->serial) + " (pid " + std::to_string(proc.pid) +
                        ", process slot " + std::to_string(p) + ") " +
                        std::to_string(held / 1'000'000) + " ms after it died, " +
                        std::to_string(wanted_for / 1'000'000) +
                        " ms of it while others had work for it");
    }
    prev_scan_ns_ = now;
    prev_stopped_ns_ = stopped_now;
}

void Checker::record(const std::vector<std::string>& found) {
    std::lock_guard guard(mu_);
    for (const auto& v : found) {
        if (!seen_.insert(v).second) continue;
        violations_.push_back(v);
        std::printf("VIOLATION: %s\n", v.c_str());
    }
}

std::vector<std::string> Checker::violations() const {
    std::lock_guard guard(mu_);
    return violations_;
}

int Checker::lost_during_run() const {
    std::lock_guard guard(mu_);
    return int(lost_.size());
}

// ---- dump --------------------------------------------------------------

namespace {
const char* cpu_state(CpuState s) {
    static const char* names[] = {"Free", "Running", "Idle", "Sleeping", "Lent"};
    return uint32_t(s) < 5 ? names[uint32_t(s)] : "?";
}
const char* thread_state(ThreadState s) {
    static const char* names[] = {"Unused", "Pool", "Waiting", "Running", "Holding", "Blocked"};
    return uint32_t(s) < 6 ? names[uint32_t(s)] : "?";
}
} // namespace

std::string dump_segment(const Segment& s) {
    std::string out;
    char line[256];
    const Header& h = s.header;
    std::snprintf(line, sizeof line,
                  "  header: cpus %d, alive %d, unheld %d, wakeable %d, recoveries %llu\n",
                  h.cpu_count, h.alive_count, h.unheld_cpus.load(rlx), h.wakeable_cpus.load(rlx),
                  (unsigned long long)h.recoveries.load(rlx));
    out += line;
    for (int c = 0; c < std::clamp(h.cpu_count, 0, kMaxCpus); ++c) {
        const CpuSlot& cpu = s.cpus[c];
        const int32_t t = cpu.owner_thread.load(rlx);
        std::snprintf(line, sizeof line, "  cpu %d: %s, owner proc %d thread %d", c,
                      cpu_state(cpu.state.load(rlx)), cpu.owner_proc.load(rlx), t);
        out += line;
        if (t >= 0 && t < kMaxThreads) {
            const ThreadSlot& th = s.threads[t];
            std::snprintf(line, sizeof line, " (%s, proc %d, tid %d)",
                          thread_state(th.state.load(rlx)), th.proc, th.tid.load(rlx));
            out += line;
        }
        out += "\n";
    }
    for (int p = 0; p < kMaxProcs; ++p) {
        const ProcSlot& proc = s.procs[p];
        if (proc.state.load(rlx) == ProcState::Unused) continue;
        std::snprintf(line, sizeof line,
                      "  proc %d: pid %d, threads %d, pool %d, ready %lld (any %lld)\n", p,
                      proc.pid, proc.threads.load(rlx), proc.pool_size.load(rlx),
                      (long long)proc.ready_total.load(rlx), (long long)proc.ready_any.load(rlx));
        out += line;
    }
    int shown = 0;
    for (int t = 0; t < kMaxThreads && shown < 64; ++t) {
        const ThreadSlot& th = s.threads[t];
        const ThreadState st = th.state.load(rlx);
        if (st == ThreadState::Unused) continue;
        ++shown;
        std::snprintf(line, sizeof line, "  thread %d: %s, proc %d, tid %d, grant %d, %.31s\n", t,
                      thread_state(st), th.proc, th.tid.load(rlx), th.grant.load(rlx), th.label);
        out += line;
    }
    return out;
}

} // namespace coexec::torture
