// coexec-bench-many-procs: N processes each join one instance, run one empty
// task and leave. Prints, per waiting style and repeat, the wall time and
// how many processes finished, got an error (and which), or hung; then per
// style the median and min-max over the repeats, and where the time of the
// slowest repeat went (process start, nosv_init, first grant, shutdown).
//
// How the children start (--start):
//   fork  the parent forks them one after another as fast as fork() allows,
//         with no barrier: the first ones run while later ones are forked
//         (the default; how a program or a job script starts them);
//   gate  every child blocks on a pipe until all are forked, then all are
//         released at once.
// How each child's main thread waits for its task's completed callback
// (--wait; `all` runs each style in turn, rotating their order by repeat,
// and `mixed` gives child i style i mod 5 of poll..condvar):
//   poll     it is not attached, and polls a flag with usleep(500);
//   spin     it is not attached, and spins on the flag (a busy thread
//            coexec does not manage);
//   pause    it attaches (nosv_attach) and nosv_pause()s; the callback
//            submits it;
//   waitfor  it attaches and loops on nosv_waitfor(500 us);
//   condvar  it is not attached, and waits on a pthread condition variable;
//   futex    it is not attached, and sleeps on the flag (std::atomic::wait).
// A per-child watchdog (alarm) kills a child that takes longer than
// --timeout: that child counts as hung.
#include "nosv_util.hpp"
#include "stats.hpp"

#include "shm/segment.hpp"

#include <CLI/CLI.hpp>
#include <coexec/ext.h>
#include <nosv.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <map>
#include <pthread.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using coexec::bench::now_ns;

// How far a child got; the last stage reached tells where a hung one waits
// (kStageNames: what a child that reached the stage is doing next).
enum Stage : int {
    kForked = 0,
    kReleased,
    kInitDone,
    kSubmitted,
    kRan,
    kCompleted,
    kShutdownDone,
    kStageCount,
};
constexpr const char* kStageNames[kStageCount] = {
    "before release",   "in nosv_init", "creating/submitting", "waiting for a CPU", "running",
    "in nosv_shutdown", "exiting"};

// One child's record, written only by that child, read by the parent once
// the child is reaped (waitpid orders the writes before the read).
struct ChildRecord {
    int stage = kForked;
    int error_rc = 0;     // the first nosv error code, or 0
    char error_call[24];  // which call returned it
    char error_text[160]; // nosv_get_error_string, plus coexec_last_error()
    uint64_t t_released = 0, t_init = 0, t_ran = 0, t_completed = 0, t_shutdown = 0;
};

enum class Start { Fork, Gate };
enum class Wait { Poll, Spin, Pause, Waitfor, Condvar, Futex, Mixed };
constexpr const char* kWaitNames[] = {"poll",    "spin",  "pause", "waitfor",
                                      "condvar", "futex", "mixed"};
// What `mixed` cycles through: every style a program's main thread uses.
constexpr Wait kMixedStyles[] = {Wait::Poll, Wait::Spin, Wait::Pause, Wait::Waitfor, Wait::Condvar};

struct Options {
    int procs = 512;
    int timeout_s = 30;
    int repeats = 1;
    bool verbose = false;
    Start start = Start::Fork;
    std::vector<Wait> waits{Wait::Poll};
    int busy = 0;          // unmanaged spinning threads in each child
    uint64_t bound_ms = 0; // a child whose task waits longer is late; 0: no bound
    std::string segment;   // an instance in use to join (not removed); empty: a fresh one
};

Wait wait_of(const std::string& name) {
    for (int i = 0; i < int(std::size(kWaitNames)); ++i)
        if (name == kWaitNames[i]) return Wait(i);
    throw CLI::ValidationError("--wait", "unknown style '" + name + "'");
}

Options parse(int argc, char** argv) {
    Options o;
    CLI::App app{"N processes start at once on one coexec instance; each runs nosv_init, one "
                 "empty task (waiting for its completed callback) and nosv_shutdown. Prints the "
                 "wall time and how many finished, failed (with the error) or hung.",
                 "coexec-bench-many-procs"};
    app.add_option("-n,--procs", o.procs, "Processes started at once")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--timeout", o.timeout_s, "Seconds before a child counts as hung (watchdog)")
        ->check(CLI::Range(1, 3600))
        ->capture_default_str();
    app.add_option("-r,--repeats", o.repeats, "Measured repeats")
        ->check(CLI::Range(1, 100))
        ->capture_default_str();
    app.add_flag("-v,--verbose", o.verbose, "Keep the children's stderr (coexec's messages)");
    std::string start = "fork";
    app.add_option("--start", start,
                   "fork: one after another, no barrier; gate: all released at once")
        ->check(CLI::IsMember({"fork", "gate"}))
        ->capture_default_str();
    std::string wait = "poll";
    app.add_option("--wait", wait,
                   "How each child's main thread waits: poll, spin, pause, waitfor, condvar, "
                   "futex, mixed, or all (each in turn)")
        ->check(
            CLI::IsMember({"poll", "spin", "pause", "waitfor", "condvar", "futex", "mixed", "all"}))
        ->capture_default_str();
    app.add_option("--busy", o.busy,
                   "Threads in each child that spin, unmanaged, from before nosv_init to its exit")
        ->check(CLI::Range(0, 64))
        ->capture_default_str();
    app.add_option("--bound-ms", o.bound_ms,
                   "A child whose task ran later than this after nosv_init returned (its "
                   "attach included) is late, which fails the run; 0: no bound")
        ->capture_default_str();
    app.add_option("--segment", o.segment,
                   "Join this instance (shared_memory.name), already in use by others, instead "
                   "of a fresh one of our own; it is not removed afterwards");
    try {
        app.parse(argc, argv);
        o.start = start == "gate" ? Start::Gate : Start::Fork;
        o.waits.clear();
        if (wait == "all")
            for (int i = 0; i < int(std::size(kWaitNames)); ++i)
                o.waits.push_back(Wait(i));
        else
            o.waits.push_back(wait_of(wait));
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        std::exit(rc == 0 ? 0 : 2);
    }
    return o;
}

// ---- the child ---------------------------------------------------------

ChildRecord* g_record = nullptr;
std::atomic<uint32_t> g_completed{0};
Wait g_wait = Wait::Poll;
nosv_task_t g_main_task = nullptr; // the attached main thread (pause, waitfor)
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;

void record_error(const char* call, int rc) {
    g_record->error_rc = rc;
    std::snprintf(g_record->error_call, sizeof g_record->error_call, "%s", call);
    const char* why = coexec_last_error();
    std::snprintf(g_record->error_text, sizeof g_record->error_text, "%s%s%s",
                  nosv_get_error_string(rc), why && *why ? ": " : "", why ? why : "");
}

void on_run(nosv_task_t) {
    g_record->t_ran = now_ns();
    g_record->stage = kRan;
}

void on_completed(nosv_task_t) {
    g_record->t_completed = now_ns();
    g_record->stage = kCompleted;
    // Release: the main thread sees the record written above.
    switch (g_wait) {
    case Wait::Condvar:
        pthread_mutex_lock(&g_mutex);
        g_completed.store(1, std::memory_order_release);
        pthread_cond_signal(&g_cond);
        pthread_mutex_unlock(&g_mutex);
        break;
    case Wait::Futex:
        g_completed.store(1, std::memory_order_release);
        g_completed.notify_one();
        break;
    case Wait::Pause:
        g_completed.store(1, std::memory_order_release);
        // A submit that comes before the pause is kept: it ends the pause.
        if (int rc = nosv_submit(g_main_task, NOSV_SUBMIT_NONE); rc != NOSV_SUCCESS)
            record_error("nosv_submit (main)", rc);
        break;
    default:
        g_completed.store(1, std::memory_order_release);
    }
}

bool done() {
    return g_completed.load(std::memory_order_acquire) != 0;
}

// The main thread waits for the completed callback in the child's style.
int wait_for_completion() {
    switch (g_wait) {
    case Wait::Poll:
        while (!done())
            ::usleep(500);
        return NOSV_SUCCESS;
    case Wait::Spin:
        while (!done()) {
        }
        return NOSV_SUCCESS;
    case Wait::Pause:
        while (!done())
            if (int rc = nosv_pause(NOSV_PAUSE_NONE); rc != NOSV_SUCCESS) return rc;
        return NOSV_SUCCESS;
    case Wait::Waitfor:
        while (!done())
            if (int rc = nosv_waitfor(500'000, nullptr); rc != NOSV_SUCCESS) return rc;
        return NOSV_SUCCESS;
    case Wait::Condvar:
        pthread_mutex_lock(&g_mutex);
        while (!done())
            pthread_cond_wait(&g_cond, &g_mutex);
        pthread_mutex_unlock(&g_mutex);
        return NOSV_SUCCESS;
    case Wait::Futex:
    case Wait::Mixed:
        while (!done())
            g_completed.wait(0, std::memory_order_acquire);
        return NOSV_SUCCESS;
    }
    return NOSV_SUCCESS;
}

int child_main(ChildRecord& rec, Wait wait, int go_fd, int ready_fd, int timeout_s, int busy) {
    g_record = &rec;
    g_wait = wait;
    // Threads coexec does not manage, busy on the same CPUs; _exit ends them.
    for (int i = 0; i < busy; ++i)
        std::thread([] {
            std::atomic<uint64_t> spins{0};
            for (;;)
                spins.fetch_add(1, std::memory_order_relaxed);
        }).detach();
    if (go_fd >= 0) { // --start gate
        char byte = 0;
        (void)!::write(ready_fd, &byte, 1);
        ::close(ready_fd);
        while (::read(go_fd, &byte, 1) < 0 && errno == EINTR) {
        }
        ::close(go_fd);
    }
    ::alarm(unsigned(timeout_s)); // the watchdog: SIGALRM ends a hung child
    rec.t_released = now_ns();
    rec.stage = kReleased;
    if (int rc = nosv_init(); rc != NOSV_SUCCESS) {
        record_error("nosv_init", rc);
        return 2;
    }
    rec.t_init = now_ns();
    rec.stage = kInitDone;
    nosv_task_type_t type = nullptr;
    nosv_task_t task = nullptr;
    int rc = nosv_type_init(&type, on_run, nullptr, on_completed, "many-procs", nullptr, nullptr,
                            NOSV_TYPE_INIT_NONE);
    if (rc != NOSV_SUCCESS) {
        record_error("nosv_type_init", rc);
        return 2;
    }
    if ((rc = nosv_create(&task, type, 0, NOSV_CREATE_NONE)) != NOSV_SUCCESS) {
        record_error("nosv_create", rc);
        return 2;
    }
    const bool attached = wait == Wait::Pause || wait == Wait::Waitfor;
    if (attached &&
        (rc = nosv_attach(&g_main_task, nullptr, "main", NOSV_ATTACH_NONE)) != NOSV_SUCCESS) {
        record_error("nosv_attach", rc);
        return 2;
    }
    rec.stage = kSubmitted;
    if ((rc = nosv_submit(task, NOSV_SUBMIT_NONE)) != NOSV_SUCCESS) {
        record_error("nosv_submit", rc);
        return 2;
    }
    if ((rc = wait_for_completion()) != NOSV_SUCCESS) {
        record_error(wait == Wait::Pause ? "nosv_pause" : "nosv_waitfor", rc);
        return 2;
    }
    if (attached && (rc = nosv_detach(NOSV_DETACH_NONE)) != NOSV_SUCCESS) {
        record_error("nosv_detach", rc);
        return 2;
    }
    nosv_destroy(task, NOSV_DESTROY_NONE);
    nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
    if ((rc = nosv_shutdown()) != NOSV_SUCCESS) {
        record_error("nosv_shutdown", rc);
        return 2;
    }
    rec.t_shutdown = now_ns();
    rec.stage = kShutdownDone;
    return 0;
}

// ---- the parent --------------------------------------------------------

struct RepeatResult {
    double wall_s = 0;
    int finished = 0, errors = 0, hung = 0, crashed = 0;
    int late = 0;                           // tasks that ran past --bound-ms
    double max_wait_ms = 0;                 // nosv_init returned -> task ran, the longest
    std::map<std::string, int> error_kinds; // "call: text" -> count
    std::map<std::string, int> hung_at;     // stage -> count
    bool segment_left = false;              // the segment was still in /dev/shm
    uint64_t fork_ns = 0;                   // forking every child, until all were ready
    uint64_t release_ns = 0;
    std::vector<ChildRecord> records;
};

class SharedRecords {
  public:
    explicit SharedRecords(int n) : bytes_(sizeof(ChildRecord) * size_t(n)) {
        void* p =
            ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) coexec::bench::fail("mmap: " + std::string(std::strerror(errno)));
        rec_ = static_cast<ChildRecord*>(p);
        for (int i = 0; i < n; ++i)
            new (rec_ + i) ChildRecord{};
    }
    ~SharedRecords() { ::munmap(rec_, bytes_); }
    SharedRecords(const SharedRecords&) = delete;
    SharedRecords& operator=(const SharedRecords&) = delete;
    ChildRecord& operator[](int i) { return rec_[i]; }

  private:
    size_t bytes_;
    ChildRecord* rec_;
};

// What a hang looks like from the segment: printed once, while children
// still wait a second before their watchdogs, so that a hang found in a
// test run can be read afterwards. Read without the lock: a snapshot of
// moving parts, good enough to see who holds each CPU and who waits.
void dump_segment(const std::string& name) {
    namespace shm = coexec::shm;
    shm::SegmentError e;
    shm::SegmentMapping map = shm::SegmentMapping::open(coexec::bench::segment_options(name), e);
    if (!map) {
        std::printf("segment %s: cannot attach (%s)\n", name.c_str(), e.message.c_str());
        return;
    }
    const shm::Segment& s = *map.get();
    const shm::Header& h = s.header;
    const uint64_t now = now_ns();
    constexpr auto rlx = std::memory_order_relaxed;
    std::printf("segment %s: %d CPUs, unheld %d, wakeable %d, %d members alive\n", name.c_str(),
                h.cpu_count, h.unheld_cpus.load(rlx), h.wakeable_cpus.load(rlx), h.alive_count);
    for (int c = 0; c < std::clamp(h.cpu_count, 0, shm::kMaxCpus); ++c) {
        const shm::CpuSlot& cpu = s.cpus[c];
        const int32_t p = cpu.owner_proc.load(rlx);
        std::printf(
            "  CPU %d: state %u owner proc %d (pid %d) thread %d, for %.1f ms; turn proc %d\n", c,
            unsigned(cpu.state.load(rlx)), p, p >= 0 && p < shm::kMaxProcs ? s.procs[p].pid : 0,
            cpu.owner_thread.load(rlx), double(now - cpu.since_ns.load(rlx)) / 1e6,
            cpu.turn_proc.load(rlx));
    }
    for (int i = 0; i < std::clamp(h.alive_count, 0, shm::kMaxProcs); ++i) {
        const int32_t p = h.alive[i];
        if (p < 0 || p >= shm::kMaxProcs) continue;
        const shm::ProcSlot& ps = s.procs[p];
        std::printf("  proc %d pid %d: ready %lld (any %lld), pool %d, receiver %d, running %d, "
                    "threads %d, beat %.1f ms ago\n",
                    p, ps.pid, static_cast<long long>(ps.ready_total.load(rlx)),
                    static_cast<long long>(ps.ready_any.load(rlx)), ps.pool_size.load(rlx),
                    ps.receiver.load(rlx), ps.running_cpus.load(rlx), ps.threads.load(rlx),
                    double(now - ps.alive_ns.load(rlx)) / 1e6);
        for (int t = 0; t < std::clamp(h.threads_used, 0, shm::kMaxThreads); ++t) {
            const shm::ThreadSlot& th = s.threads[t];
            if (th.proc != p || th.state.load(rlx) == shm::ThreadState::Unused) continue;
            std::printf("    thread %d tid %d: state %u grant %d word %u receive %u label %.*s\n",
                        t, th.tid.load(rlx), unsigned(th.state.load(rlx)), th.grant.load(rlx),
                        th.word.load(rlx), th.receive.load(rlx), int(sizeof th.label), th.label);
        }
    }
    std::fflush(stdout);
}

// Removes the segment if it is still there; true if it was.
bool remove_segment(const std::string& name) {
    const std::string path =
        "/dev/shm" + coexec::shm::segment_shm_name(coexec::bench::segment_options(name));
    if (::access(path.c_str(), F_OK) != 0) return false;
    std::string message;
    if (!coexec::shm::SegmentMapping::unlink(coexec::bench::segment_options(name), message))
        std::fprintf(stderr, "coexec-bench-many-procs: %s\n", message.c_str());
    return true;
}

RepeatResult run_once(const Options& o, Wait wait, const std::string& segment) {
    RepeatResult r;
    SharedRecords records(o.procs);
    const bool gate = o.start == Start::Gate;
    int go[2] = {-1, -1}, ready[2] = {-1, -1};
    if (gate && (::pipe2(go, O_CLOEXEC) != 0 || ::pipe2(ready, O_CLOEXEC) != 0))
        coexec::bench::fail("pipe: " + std::string(std::strerror(errno)));
    std::vector<pid_t> pids;
    pids.reserve(size_t(o.procs));
    std::fflush(nullptr);
    const uint64_t fork_start = now_ns();
    for (int i = 0; i < o.procs; ++i) {
        pid_t pid = ::fork();
        if (pid < 0) {
            std::fprintf(stderr, "coexec-bench-many-procs: fork: %s\n", std::strerror(errno));
            for (pid_t p : pids)
                ::kill(p, SIGKILL);
            for (pid_t p : pids)
                ::waitpid(p, nullptr, 0);
            std::exit(1);
        }
        if (pid == 0) {
            if (gate) {
                ::close(go[1]);
                ::close(ready[0]);
            }
            if (!o.verbose) {
                int null = ::open("/dev/null", O_WRONLY);
                if (null >= 0) ::dup2(null, STDERR_FILENO);
            }
            const Wait style =
                wait == Wait::Mixed ? kMixedStyles[size_t(i) % std::size(kMixedStyles)] : wait;
            ::_exit(child_main(records[i], style, go[0], ready[1], o.timeout_s, o.busy));
        }
        pids.push_back(pid);
    }
    if (gate) {
        ::close(go[0]);
        ::close(ready[1]);
        // Every child is blocked on the go pipe before the release.
        char buf[256];
        for (int got = 0; got < o.procs;) {
            ssize_t n = ::read(ready[0], buf, sizeof buf);
            if (n <= 0 && errno != EINTR) break; // a child died early: its record says so
            if (n > 0) got += int(n);
        }
        ::close(ready[0]);
    }
    r.fork_ns = now_ns() - fork_start;
    // Forked without a gate, the children start as they are forked.
    r.release_ns = gate ? now_ns() : fork_start;
    if (gate) ::close(go[1]); // every read() returns: all children start now
    // The children's watchdogs end hung ones; this is only the parent's
    // safety net if a watchdog itself fails.
    const uint64_t deadline = r.release_ns + uint64_t(o.timeout_s + 10) * 1'000'000'000ULL;
    uint64_t last_exit = r.release_ns;
    std::vector<int> status(size_t(o.procs), 0);
    size_t left = pids.size();
    // A second before the watchdogs end the children still running: what
    // the segment says about them.
    const uint64_t dump_at =
        r.release_ns + uint64_t(std::max(o.timeout_s - 1, 1)) * 1'000'000'000ULL;
    bool dumped = false;
    while (left > 0) {
        if (!dumped && now_ns() > dump_at) {
            dumped = true;
            std::printf("%zu children still running after %d s:\n", left, o.timeout_s - 1);
            dump_segment(segment);
        }
        int st = 0;
        pid_t pid = ::waitpid(-1, &st, WNOHANG);
        if (pid > 0) {
            auto it = std::find(pids.begin(), pids.end(), pid);
            if (it == pids.end()) continue;
            status[size_t(it - pids.begin())] = st;
            *it = -1;
            --left;
            last_exit = now_ns();
            continue;
        }
        if (now_ns() > deadline) {
            for (pid_t p : pids)
                if (p > 0) ::kill(p, SIGKILL);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    r.wall_s = double(last_exit - r.release_ns) / 1e9;
    for (int i = 0; i < o.procs; ++i) {
        const ChildRecord& rec = records[i];
        r.records.push_back(rec);
        const int st = status[size_t(i)];
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            ++r.finished;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 2) {
            ++r.errors;
            ++r.error_kinds[std::string(rec.error_call) + ": " + rec.error_text];
        } else if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGALRM || WTERMSIG(st) == SIGKILL)) {
            ++r.hung;
            ++r.hung_at[kStageNames[std::clamp(rec.stage, 0, kStageCount - 1)]];
        } else {
            ++r.crashed;
            ++r.error_kinds[WIFSIGNALED(st)
                                ? std::string("crashed: ") + strsignal(WTERMSIG(st))
                                : "exited with status " + std::to_string(WEXITSTATUS(st))];
        }
    }
    for (const ChildRecord& rec : r.records) {
        if (!rec.t_ran || !rec.t_init) continue;
        const double wait_ms = double(rec.t_ran - rec.t_init) / 1e6;
        r.max_wait_ms = std::max(r.max_wait_ms, wait_ms);
        if (o.bound_ms && wait_ms > double(o.bound_ms)) ++r.late;
    }
    if (o.segment.empty()) r.segment_left = remove_segment(segment);
    return r;
}

void print_repeat(int index, const Options& o, Wait wait, const RepeatResult& r) {
    std::printf("repeat %d: wait %-7s procs %d  wall %.3f s  finished %d  errors %d  hung %d%s%s\n",
                index, kWaitNames[int(wait)], o.procs, r.wall_s, r.finished, r.errors + r.crashed,
                r.hung, r.crashed ? "  (crashed: " : "",
                r.crashed ? (std::to_string(r.crashed) + ")").c_str() : "");
    for (auto& [what, n] : r.error_kinds)
        std::printf("    error x%d: %s\n", n, what.c_str());
    for (auto& [where, n] : r.hung_at)
        std::printf("    hung x%d: %s\n", n, where.c_str());
    if (r.segment_left) std::printf("    (segment left in /dev/shm; removed)\n");
    std::printf("    longest wait, nosv_init returned -> task ran: %.1f ms", r.max_wait_ms);
    if (o.bound_ms)
        std::printf("; late (past %llu ms): %d", (unsigned long long)o.bound_ms, r.late);
    std::printf("\n");
}

// Where the time went, over the children that reached each point.
void print_phases(const RepeatResult& r) {
    auto line = [&](const char* what, auto pick) {
        std::vector<double> v;
        for (const ChildRecord& rec : r.records)
            if (double ms; pick(rec, ms)) v.push_back(ms);
        if (v.empty()) return;
        auto s = coexec::bench::summarize(v);
        std::printf("  %-34s median %8.1f ms  min %8.1f  max %8.1f  (%zu procs)\n", what, s.median,
                    s.min, s.max, v.size());
    };
    auto ms = [](uint64_t a, uint64_t b) { return double(b - a) / 1e6; };
    const uint64_t t0 = r.release_ns;
    std::printf("  forking every child: %.1f ms\n", double(r.fork_ns) / 1e6);
    line("start -> child running", [&](const ChildRecord& c, double& out) {
        return c.t_released && (out = ms(t0, c.t_released), true);
    });
    line("nosv_init (own duration)", [&](const ChildRecord& c, double& out) {
        return c.t_init && (out = ms(c.t_released, c.t_init), true);
    });
    line("start -> nosv_init returned", [&](const ChildRecord& c, double& out) {
        return c.t_init && (out = ms(t0, c.t_init), true);
    });
    line("submit -> task runs (first grant)", [&](const ChildRecord& c, double& out) {
        return c.t_ran && (out = ms(c.t_init, c.t_ran), true);
    });
    line("start -> task ran", [&](const ChildRecord& c, double& out) {
        return c.t_ran && (out = ms(t0, c.t_ran), true);
    });
    line("completed -> nosv_shutdown returned", [&](const ChildRecord& c, double& out) {
        return c.t_shutdown && (out = ms(c.t_completed, c.t_shutdown), true);
    });
    line("start -> shutdown returned", [&](const ChildRecord& c, double& out) {
        return c.t_shutdown && (out = ms(t0, c.t_shutdown), true);
    });
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const std::string segment =
        o.segment.empty() ? "bench-procs-" + std::to_string(::getpid()) : o.segment;
    coexec::bench::use_segment(segment);
    std::signal(SIGPIPE, SIG_IGN);
    const size_t styles = o.waits.size();
    std::vector<std::vector<double>> walls(styles), finished(styles);
    std::vector<RepeatResult> slowest(styles);
    bool any_failed = false;
    for (int i = 1; i <= o.repeats; ++i) {
        // Each repeat starts with the next style: none always runs first.
        for (size_t k = 0; k < styles; ++k) {
            const size_t w = (k + size_t(i - 1)) % styles;
            RepeatResult r = run_once(o, o.waits[w], segment);
            print_repeat(i, o, o.waits[w], r);
            std::fflush(stdout);
            walls[w].push_back(r.wall_s);
            finished[w].push_back(r.finished);
            any_failed |= r.finished != o.procs || r.late > 0;
            if (i == 1 || r.wall_s > slowest[w].wall_s) slowest[w] = std::move(r);
        }
    }
    for (size_t w = 0; w < styles; ++w) {
        std::printf("phases of the slowest repeat, wait %s:\n", kWaitNames[int(o.waits[w])]);
        print_phases(slowest[w]);
    }
    std::printf("%-8s %-5s %6s %8s  %-20s %s\n", "wait", "start", "procs", "repeats",
                "wall s median (min-max)", "finished median (min-max)");
    for (size_t w = 0; w < styles; ++w) {
        auto t = coexec::bench::summarize(walls[w]);
        auto f = coexec::bench::summarize(finished[w]);
        std::printf("%-8s %-5s %6d %8d  %.3f (%.3f-%.3f)    %.0f (%.0f-%.0f)\n",
                    kWaitNames[int(o.waits[w])], o.start == Start::Gate ? "gate" : "fork", o.procs,
                    o.repeats, t.median, t.min, t.max, f.median, f.min, f.max);
    }
    // Any child that did not finish (an error, a crash, a hang), or whose
    // task ran past --bound-ms, fails the run.
    return any_failed ? 1 : 0;
}
