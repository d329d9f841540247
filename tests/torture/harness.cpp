#include "harness.hpp"

#include "inspect.hpp"
#include "member.hpp"
#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"
#include "spawn.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace coexec::torture {

using shm::now_ns;

std::atomic<bool> Harness::interrupted_{false};

namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr auto rlx = std::memory_order_relaxed;

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
               sigabbrev_np(WTERMSIG(status)) + ")";
    return "status " + std::to_string(status);
}

std::string read_small_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// The state letter of /proc/<pid>/stat (or of one of its threads), '?' if gone.
char proc_state(const std::string& stat_path) {
    const std::string text = read_small_file(stat_path);
    const size_t paren = text.rfind(')');
    return paren != std::string::npos && paren + 2 < text.size() ? text[paren + 2] : '?';
}

// Waits until the kernel has stopped `pid` (after a SIGSTOP).
bool wait_until_stopped(pid_t pid, uint64_t timeout_ns) {
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    const uint64_t give_up = now_ns() + timeout_ns;
    for (;;) {
        const char st = proc_state(path);
        if (st == 'T' || st == 't') return true;
        if (st == 'Z' || st == '?' || now_ns() > give_up) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

// Each thread of `pid`: tid, kernel state, and where it sleeps.
std::string thread_states(pid_t pid) {
    std::string out;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return "  (no /proc entry)\n";
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const std::string t = dir + "/" + e->d_name;
        std::string comm = read_small_file(t + "/comm");
        if (!comm.empty() && comm.back() == '\n') comm.pop_back();
        out += "  tid " + std::string(e->d_name) + " (" + comm + "): state " +
               proc_state(t + "/stat") + ", wchan " + read_small_file(t + "/wchan") + "\n";
    }
    ::closedir(d);
    return out;
}

double ms(uint64_t ns) {
    return double(ns) / 1e6;
}

} // namespace

Harness::Harness(const Options& options) : o_(options), rng_(options.seed) {}

Harness::~Harness() {
    cleanup();
}

bool Harness::setup() {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) {
        std::perror("coexec-torture: readlink /proc/self/exe");
        return false;
    }
    exe_.assign(path, size_t(n));
    name_ = "torture" + std::to_string(::getpid());
    seg_options_.name = name_;
    seg_options_.create = false;
    std::string ignored;
    shm::SegmentMapping::unlink(seg_options_, ignored); // a stale one of an earlier pid

    // The board: not close-on-exec, so every member inherits it.
    board_fd_ = ::memfd_create("coexec-torture-board", 0);
    if (board_fd_ < 0 || ::ftruncate(board_fd_, sizeof(Board)) != 0) {
        std::perror("coexec-torture: board");
        return false;
    }
    void* p = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED, board_fd_, 0);
    if (p == MAP_FAILED) {
        std::perror("coexec-torture: mmap board");
        return false;
    }
    board_ = new (p) Board{};
    slot_used_.assign(kBoardSlots, false);
    return true;
}

MemberProc* Harness::spawn(bool sweep) {
    auto m = std::make_unique<MemberProc>();
    m->serial = next_serial_++;
    m->sweep = sweep;
    if (!sweep) {
        auto it = std::find(slot_used_.begin(), slot_used_.end(), false);
        if (it == slot_used_.end()) {
            fail("no free board slot for a new member");
            return nullptr;
        }
        m->slot = int(it - slot_used_.begin());
        slot_used_[size_t(m->slot)] = true;
        MemberSlot& slot = board_->slots[size_t(m->slot)];
        for (auto& c : slot.ops)
            c.store(0, rlx);
        slot.phase.store(Phase::Starting, rlx);
        slot.in_flight.store(0, rlx);
    }
    m->out = std::make_unique<OutputCapture>();
    const uint32_t life = o_.life_min_ms + uint32_t(rng_() % (o_.life_max_ms - o_.life_min_ms + 1));
    const int rounds = rng_() % 4 == 0 ? 2 : 1;
    m->lifetime_ns = sweep ? 0 : uint64_t(life) * kMs;
    std::vector<std::string> argv = {exe_,
                                     "member",
                                     "--board-fd",
                                     std::to_string(board_fd_),
                                     "--slot",
                                     std::to_string(std::max(m->slot, 0)),
                                     "--threads",
                                     std::to_string(o_.threads),
                                     "--seed",
                                     std::to_string(rng_()),
                                     "--lifetime-ms",
                                     std::to_string(life),
                                     "--rounds",
                                     std::to_string(rounds),
                                     "--drain-ms",
                                     std::to_string(o_.finish_ms * 3 / 4),
                                     "--parent",
                                     std::to_string(::getpid())};
    if (sweep) argv.push_back("--sweep");
    // Our own segment, whatever else the environment configures.
    const char* env_ov = std::getenv("NOSV_CONFIG_OVERRIDE");
    std::string ov = env_ov && *env_ov ? std::string(env_ov) + "," : std::string();
    ov += "shared_memory.name=" + name_;
    m->spawned_ns = now_ns();
    m->pid =
        test_support::spawn(argv, {{"NOSV_CONFIG_OVERRIDE", ov}}, -1, m->out->fd(), m->out->fd());
    m->start_time = shm::process_start_time(m->pid);
    if (!sweep) ++stats_.spawned;
    if (o_.verbose)
        std::printf("[%8.1f ms] spawn member #%d pid %d (%u ms)\n", ms(m->spawned_ns - start_ns_),
                    m->serial, m->pid, life);
    members_.push_back(std::move(m));
    return members_.back().get();
}

size_t Harness::alive_workers() const {
    return size_t(
        std::count_if(members_.begin(), members_.end(), [](const auto& m) { return !m->sweep; }));
}

void Harness::reap() {
    for (;;) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid <= 0) return;
        const uint64_t now = now_ns();
        auto it = std::find_if(members_.begin(), members_.end(),
                               [&](const auto& m) { return m->pid == pid; });
        if (pid == burst_pid_) {
            on_burst_exit(status);
            continue;
        }
        if (it == members_.end()) continue; // a helper (gdb) reaped here
        on_exit(**it, status, now);
        members_.erase(it);
    }
}

void Harness::on_exit(MemberProc& m, int status, uint64_t now) {
    timeline_.died(m.pid, m.start_time, m.serial, now);
    if (m.stopped) timeline_.continued(now);
    if (m.slot >= 0) {
        MemberSlot& slot = board_->slots[size_t(m.slot)];
        for (int op = 0; op < kOpCount; ++op)
            stats_.ops[size_t(op)] += slot.ops[size_t(op)].load(rlx);
        slot_used_[size_t(m.slot)] = false;
    }
    if (o_.verbose)
        std::printf("[%8.1f ms] member #%d pid %d %s\n", ms(now - start_ns_), m.serial, m.pid,
                    describe_status(status).c_str());
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!m.sweep && (!m.kill_sent || m.hung)) {
        ++stats_.never_killed;
        stats_.never_killed_ok += clean && !m.hung;
    }
    if (m.hung) return; // reported already
    if (clean && m.sweep) {
        ++stats_.sweeps;
    } else if (clean) {
        ++stats_.finished;
        if (!m.kill_sent) {
            const uint64_t due = m.spawned_ns + m.lifetime_ns + m.stopped_total_ns;
            const uint64_t late = now > due ? now - due : 0;
            stats_.slowest_finish_ns = std::max(stats_.slowest_finish_ns, late);
            if (late > uint64_t(o_.finish_ms) * kMs) {
                ++stats_.finished_late;
                fail_member(m, "finished " + std::to_string(late / kMs) +
                                   " ms after its lifetime, more than --finish-ms");
            }
        }
    } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && m.kill_sent) {
        ++stats_.killed;
    } else {
        // Not what the killer sent: the member failed (a check, a sanitizer
        // report, a crash).
        fail_member(m, describe_status(status));
    }
}

void Harness::fail(const std::string& what) {
    std::printf("FAIL: %s\n", what.c_str());
    std::fflush(stdout);
    failures_.push_back(what);
}

void Harness::fail_member(const MemberProc& m, const std::string& what) {
    std::string text = (m.sweep ? "sweeper #" : "member #") + std::to_string(m.serial) + " (pid " +
                       std::to_string(m.pid) + (m.kill_sent ? ", killed by us" : "") +
                       (m.stopped_total_ns ? ", was stopped" : "") + "): " + what;
    const std::string tail = m.out ? m.out->tail() : std::string();
    text += tail.empty() ? "\n  (it printed nothing)"
                         : "\n---- its output (tail) ----\n" + tail + "---- end of output ----";
    fail(text);
}

// ---- disruptions -------------------------------------------------------

MemberProc* Harness::random_member(bool not_stopped) {
    std::vector<MemberProc*> candidates;
    for (auto& m : members_)
        if (!m->sweep && !m->kill_sent && !(not_stopped && m->stopped))
            candidates.push_back(m.get());
    if (candidates.empty()) return nullptr;
    return candidates[rng_() % candidates.size()];
}

void Harness::kill_member(MemberProc& m, bool in_lock) {
    ::kill(m.pid, SIGKILL);
    m.kill_sent = true;
    if (in_lock) ++stats_.killed_in_lock;
    if (o_.verbose)
        std::printf("[%8.1f ms] SIGKILL member #%d%s\n", ms(now_ns() - start_ns_), m.serial,
                    in_lock ? " inside the segment lock" : "");
}

void Harness::stop_member(MemberProc& m, uint64_t now, uint32_t for_ms) {
    ::kill(m.pid, SIGSTOP);
    m.stopped = true;
    m.stopped_since_ns = now;
    m.cont_due_ns = now + uint64_t(for_ms) * kMs;
    timeline_.stopped(now);
    ++stats_.stopped;
    if (o_.verbose)
        std::printf("[%8.1f ms] SIGSTOP member #%d for %u ms\n", ms(now - start_ns_), m.serial,
                    for_ms);
}

void Harness::cont_member(MemberProc& m, uint64_t now) {
    ::kill(m.pid, SIGCONT);
    m.stopped = false;
    m.stopped_total_ns += now - m.stopped_since_ns;
    timeline_.continued(now);
    ++stats_.continued;
}

void Harness::continue_due(uint64_t now) {
    for (auto& m : members_)
        if (m->stopped && !m->kill_sent && now >= m->cont_due_ns) cont_member(*m, now);
}

MemberProc* Harness::member_of_tid(pid_t tid) {
    for (auto& m : members_) {
        if (m->sweep) continue;
        if (m->pid == tid) return m.get();
        const std::string task = "/proc/" + std::to_string(m->pid) + "/task/" + std::to_string(tid);
        if (::access(task.c_str(), F_OK) == 0) return m.get();
    }
    return nullptr;
}

bool Harness::snipe(uint64_t now) {
    // glibc keeps the owner's tid in the mutex's futex word (robust mutexes
    // need it there for the kernel's owner-died handling).
    std::atomic_ref<int> word(seg_->header.lock.__data.__lock);
    const uint64_t give_up = now + 20 * kMs;
    while (now_ns() < give_up) {
        const pid_t tid = word.load(rlx) & FUTEX_TID_MASK;
        MemberProc* m = tid ? member_of_tid(tid) : nullptr;
        if (!m || m->kill_sent || m->stopped) {
            std::this_thread::yield();
            continue;
        }
        ::kill(m->pid, SIGSTOP);
        const bool stopped = wait_until_stopped(m->pid, 50 * kMs);
        const bool in_lock = stopped && (word.load(rlx) & FUTEX_TID_MASK) == tid;
        const uint64_t t = now_ns();
        m->stopped = true;
        m->stopped_since_ns = t;
        timeline_.stopped(t);
        ++stats_.stopped;
        ++stats_.snipes;
        if (in_lock) ++stats_.stopped_in_lock;
        if (rng_() % 2) {
            kill_member(*m, in_lock);
        } else {
            const uint32_t hold = 1 + uint32_t(rng_() % o_.stop_max_ms);
            m->cont_due_ns = t + uint64_t(hold) * kMs;
            if (o_.verbose)
                std::printf("[%8.1f ms] SIGSTOP member #%d %sfor %u ms\n", ms(t - start_ns_),
                            m->serial, in_lock ? "inside the segment lock " : "", hold);
        }
        return true;
    }
    ++stats_.snipes_missed;
    return false;
}

void Harness::disrupt(uint64_t now) {
    // Poisson arrivals at kill_rate per second.
    std::exponential_distribution<double> gap(o_.kill_rate);
    next_disrupt_ns_ = now + uint64_t(gap(rng_) * 1e9);
    switch (rng_() % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
        if (MemberProc* m = random_member(false)) kill_member(*m, false);
        break;
    case 4:
    case 5:
    case 6:
    case 7:
        if (MemberProc* m = random_member(true))
            stop_member(*m, now, 1 + uint32_t(rng_() % o_.stop_max_ms));
        break;
    default:
        snipe(now);
        break;
    }
}

// ---- survivors that do not finish ---------------------------------------

void Harness::check_hung(uint64_t now) {
    for (auto& m : members_) {
        if (m->kill_sent || m->hung) continue;
        const uint64_t stopped = m->stopped_total_ns + (m->stopped ? now - m->stopped_since_ns : 0);
        const uint64_t due =
            m->spawned_ns + m->lifetime_ns + stopped + uint64_t(o_.finish_ms) * kMs;
        const bool stuck =
            m->slot >= 0 && board_->slots[size_t(m->slot)].phase.load(rlx) == Phase::Stuck;
        if (now > due || stuck) report_hung(*m);
    }
}

void Harness::report_hung(MemberProc& m) {
    m.hung = true;
    std::string what = "did not finish within --finish-ms " + std::to_string(o_.finish_ms) +
                       " ms after its lifetime";
    if (m.slot >= 0 && board_->slots[size_t(m.slot)].phase.load(rlx) == Phase::Stuck)
        what = "its tasks did not complete within its drain time (3/4 of --finish-ms)";
    if (m.slot >= 0) {
        const MemberSlot& slot = board_->slots[size_t(m.slot)];
        what += "; phase " + std::to_string(uint32_t(slot.phase.load(rlx))) + " (0 starting, " +
                "1 running, 2 draining, 3 done, 4 stuck), tasks in flight " +
                std::to_string(slot.in_flight.load(rlx));
    }
    what += "\n  its threads:\n" + thread_states(m.pid);
    what += "  the segment (read without the lock):\n" + dump_segment(*seg_.get());
    // gdb takes seconds: let stopped members go meanwhile.
    const uint64_t now = now_ns();
    for (auto& other : members_)
        if (other->stopped && !other->kill_sent) cont_member(*other, now);
    what += "  stacks:\n" + inspect_process(m.pid, task_addresses(m.out->tail()));
    fail_member(m, what);
    kill_member(m, false);
}

bool Harness::wait_all_exited(uint64_t give_up_ns) {
    while (!members_.empty()) {
        const uint64_t now = now_ns();
        reap();
        continue_due(now);
        check_hung(now);
        if (now > give_up_ns || interrupted_.load(rlx)) {
            for (auto& m : members_)
                if (!m->kill_sent) kill_member(*m, false);
            if (now > give_up_ns + 10'000 * kMs) return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// ---- bursts ------------------------------------------------------------

void Harness::start_burst(uint64_t now) {
    // The bound on how long a ready task waits for a CPU (docs/design.md,
    // "Liveness"): each process with work ahead of it in the round-robin
    // holds the CPU for at most a quantum plus the preemption delay, and a
    // member stopped by the killer holds its CPUs for up to --stop-max-ms.
    const shm::SegmentConfig& cfg = seg_->header.config;
    const uint64_t turn_ms = (cfg.quantum_ns + cfg.preempt_after_ns) / kMs;
    burst_bound_ms_ = uint64_t(o_.burst + o_.procs) * turn_ms + 10ULL * o_.stop_max_ms;
    burst_out_ = std::make_unique<OutputCapture>();
    const std::vector<std::string> argv = {o_.burst_program,
                                           "--procs",
                                           std::to_string(o_.burst),
                                           "--start",
                                           "fork",
                                           "--wait",
                                           "mixed",
                                           "--busy",
                                           std::to_string(o_.burst_busy),
                                           "--bound-ms",
                                           std::to_string(burst_bound_ms_),
                                           "--timeout",
                                           std::to_string(o_.finish_ms / 1000 + 1),
                                           "--segment",
                                           name_};
    burst_pid_ = test_support::spawn(argv, {}, -1, burst_out_->fd(), burst_out_->fd());
    next_burst_ns_ = now + uint64_t(o_.burst_every_ms) * kMs;
    if (o_.verbose)
        std::printf("[%8.1f ms] burst of %d processes, pid %d\n", ms(now - start_ns_), o_.burst,
                    burst_pid_);
}

void Harness::on_burst_exit(int status) {
    burst_pid_ = 0;
    ++bursts_;
    const std::string out = burst_out_->tail();
    // "longest wait, nosv_init returned -> task ran: X ms"
    const std::string key = "task ran: ";
    if (size_t at = out.rfind(key); at != std::string::npos)
        burst_max_wait_ms_ = std::max(burst_max_wait_ms_, std::atof(out.c_str() + at + key.size()));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail("burst #" + std::to_string(bursts_) + " of " + std::to_string(o_.burst) +
             " processes: " + describe_status(status) + "\n" + out);
}

bool Harness::wait_burst(uint64_t give_up_ns) {
    while (burst_pid_ != 0) {
        reap();
        if (now_ns() > give_up_ns) {
            ::kill(burst_pid_, SIGKILL);
            ::waitpid(burst_pid_, nullptr, 0);
            burst_pid_ = 0;
            fail("a burst did not end in time");
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// ---- the run -----------------------------------------------------------

bool Harness::map_segment() {
    // The first member creates it; keep our mapping until the end so the
    // segment outlives members that come and go. Until the creator has sized
    // it, an attach may also see an empty file ("truncated"): try again.
    const uint64_t give_up = now_ns() + 60'000 * kMs;
    std::string last;
    while (now_ns() < give_up) {
        shm::SegmentError e;
        seg_ = shm::SegmentMapping::open(seg_options_, e);
        if (seg_) return true;
        last = e.message;
        reap();
        if (members_.empty()) {
            fail("the first member ended before it created the segment (" + last + ")");
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    fail("cannot map the members' segment within 60 s: " + last);
    return false;
}

int Harness::run() {
    if (!setup()) return 1;
    std::printf("coexec-torture: seed %llu, %d processes x %d threads, %.0f s, %.1f "
                "disruptions/s, segment %s\n",
                (unsigned long long)o_.seed, o_.procs, o_.threads, o_.seconds, o_.kill_rate,
                name_.c_str());
    std::fflush(stdout);
    start_ns_ = now_ns();
    try {
        spawn(false);
        if (map_segment()) {
            checker_ = std::make_unique<Checker>(*seg_.get(), timeline_, o_.check_min_ms,
                                                 o_.check_max_ms, o_.lost_ms, rng_());
            checker_->start();
            const uint64_t end = start_ns_ + uint64_t(o_.seconds * 1e9);
            next_disrupt_ns_ = now_ns();
            for (uint64_t now = now_ns(); now < end && !interrupted_.load(rlx); now = now_ns()) {
                reap();
                while (alive_workers() < size_t(o_.procs) && failures_.size() < 20)
                    if (!spawn(false)) break;
                continue_due(now);
                if (o_.burst > 0 && !o_.burst_program.empty() && burst_pid_ == 0 &&
                    now >= next_burst_ns_)
                    start_burst(now);
                if (o_.kill_rate > 0 && now >= next_disrupt_ns_) disrupt(now);
                check_hung(now);
                std::this_thread::sleep_for(std::chrono::microseconds(500));
            }
            // Wind down: no more disruptions; every member finishes its work.
            const uint64_t now = now_ns();
            for (auto& m : members_)
                if (m->stopped && !m->kill_sent) cont_member(*m, now);
            const uint64_t bound = uint64_t(o_.life_max_ms + o_.finish_ms) * kMs * 2;
            if (!wait_all_exited(now + bound)) fail("members could not be reaped");
            wait_burst(now + bound);
            if (!interrupted_.load(rlx)) {
                // The next init reclaims what dead members left
                // (docs/design.md, invariant 2): a last member joins and leaves.
                spawn(true);
                if (!wait_all_exited(now_ns() + uint64_t(o_.finish_ms) * kMs * 2))
                    fail("the sweeper could not be reaped");
            }
            checker_->stop();
            checker_->check_once();
            final_check();
        }
    } catch (const std::exception& e) {
        fail(std::string("harness error: ") + e.what());
    }
    if (interrupted_.load(rlx)) fail("interrupted");
    cleanup();
    print_report();
    const bool passed =
        failures_.empty() &&
        (!checker_ || (checker_->violations().empty() && checker_->lost_during_run() == 0)) &&
        final_lost_ == 0 && final_violations_.empty() && !segment_left_;
    std::printf("result: %s\n", passed ? "PASS" : "FAIL");
    std::fflush(stdout);
    return passed ? 0 : 1;
}

void Harness::final_check() {
    if (!seg_) return;
    shm::Segment& s = *seg_.get();
    scheduler::SharedScheduler sched(s);
    scheduler::WakeList wakes;
    std::string dump;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        final_violations_ = scheduler::check_invariants(s);
        recoveries_ = s.header.recoveries.load(rlx);
        for (int c = 0; c < std::clamp(s.header.cpu_count, 0, shm::kMaxCpus); ++c) {
            const shm::CpuSlot& cpu = s.cpus[c];
            const auto st = cpu.state.load(rlx);
            const int32_t p = cpu.owner_proc.load(rlx), t = cpu.owner_thread.load(rlx);
            if (st == shm::CpuState::Free && p == shm::kNone && t == shm::kNone) continue;
            ++final_lost_;
            final_violations_.push_back("after the run, CPU " + std::to_string(c) +
                                        " is not Free without owner (state " +
                                        std::to_string(uint32_t(st)) + ", owner proc " +
                                        std::to_string(p) + ", thread " + std::to_string(t) + ")");
        }
        if (s.header.alive_count != 0)
            final_violations_.push_back("after the run, " + std::to_string(s.header.alive_count) +
                                        " processes are still registered");
        int threads = 0;
        for (const auto& th : s.threads)
            threads += th.state.load(rlx) != shm::ThreadState::Unused;
        if (threads)
            final_violations_.push_back("after the run, " + std::to_string(threads) +
                                        " thread slots are still in use");
        if (!final_violations_.empty()) dump = dump_segment(s);
    }
    wakes.flush(s);
    for (const auto& v : final_violations_)
        std::printf("VIOLATION: %s\n", v.c_str());
    if (!dump.empty()) std::printf("segment after the run:\n%s", dump.c_str());
}

void Harness::cleanup() {
    for (auto& m : members_)
        ::kill(m->pid, SIGKILL);
    for (auto& m : members_)
        ::waitpid(m->pid, nullptr, 0);
    members_.clear();
    if (checker_) checker_->stop();
    if (!name_.empty()) {
        seg_ = {};
        std::string ignored;
        shm::SegmentMapping::unlink(seg_options_, ignored);
        const std::string path = "/dev/shm" + shm::segment_shm_name(seg_options_);
        segment_left_ = ::access(path.c_str(), F_OK) == 0;
        name_.clear();
    }
    if (board_) {
        ::munmap(board_, sizeof(Board));
        board_ = nullptr;
    }
    if (board_fd_ >= 0) {
        ::close(board_fd_);
        board_fd_ = -1;
    }
}

void Harness::print_report() {
    const RunStats& s = stats_;
    std::printf("\noperations:\n");
    uint64_t total = 0;
    for (int op = 0; op < kOpCount; ++op) {
        total += s.ops[size_t(op)];
        std::printf("  %-22s %10llu\n", kOpNames[size_t(op)],
                    (unsigned long long)s.ops[size_t(op)]);
    }
    std::printf("  %-22s %10llu\n", "total", (unsigned long long)total);
    std::printf("members: %d started, %d finished their work, %d finished late; never killed: %d, "
                "of which %d finished their work (all tasks completed, exit code 0)\n",
                s.spawned, s.finished, s.finished_late, s.never_killed, s.never_killed_ok);
    std::printf("disruptions: %d killed (%d inside the segment lock), %d stopped (%d inside the "
                "segment lock), %d continued; lock snipes %d hit, %d missed\n",
                s.killed, s.killed_in_lock, s.stopped, s.stopped_in_lock, s.continued, s.snipes,
                s.snipes_missed);
    std::printf("kills survived: %d; segment lock repairs after a dead holder: %llu\n", s.killed,
                (unsigned long long)recoveries_);
    if (checker_) {
        std::printf("invariant checks: %llu, failed: %llu, distinct violations: %zu\n",
                    (unsigned long long)checker_->checks(),
                    (unsigned long long)checker_->failed_checks(), checker_->violations().size());
        std::printf("CPUs lost during the run: %d (longest Running for a dead member: %.1f ms, "
                    "%.1f ms of it while others had work for it; bound %u ms)\n",
                    checker_->lost_during_run(), ms(checker_->max_dead_hold_ns()),
                    ms(checker_->max_wanted_hold_ns()), o_.lost_ms);
    }
    std::printf("CPUs lost after the run: %d; invariant violations after the run: %zu\n",
                final_lost_, final_violations_.size());
    std::printf("slowest finish of a never-killed member: %.1f ms after its lifetime (bound %u "
                "ms)\n",
                ms(s.slowest_finish_ns), o_.finish_ms);
    if (o_.burst > 0)
        std::printf("bursts: %d of %d processes each (forked without a barrier, mixed waiting "
                    "styles, %d busy unmanaged threads each); longest wait of a task for a CPU "
                    "%.1f ms (bound %llu ms)\n",
                    bursts_, o_.burst, o_.burst_busy, burst_max_wait_ms_,
                    (unsigned long long)burst_bound_ms_);
    std::printf("segment left in /dev/shm: %s\n", segment_left_ ? "yes" : "no");
    std::printf("failures: %zu\n", failures_.size());
    for (const auto& f : failures_) {
        const size_t nl = f.find('\n');
        std::printf("  %s\n", f.substr(0, nl).c_str());
    }
}

} // namespace coexec::torture
