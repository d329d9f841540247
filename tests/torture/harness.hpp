// The torture run: keeps `procs` member processes alive, disrupts them at
// random (SIGKILL, SIGSTOP/SIGCONT, and both aimed at members inside the
// segment lock), checks the segment's invariants all along, and reports.
#pragma once

#include "board.hpp"
#include "capture.hpp"
#include "checker.hpp"
#include "options.hpp"
#include "shm/segment.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::torture {

// One member process, as the harness tracks it.
struct MemberProc {
    int serial = 0;
    pid_t pid = 0;
    uint64_t start_time = 0; // kernel start time: (pid, start_time) names it
    int slot = -1;           // on the board
    bool sweep = false;      // the final sweeper, not a worker
    std::unique_ptr<OutputCapture> out;
    uint64_t spawned_ns = 0, lifetime_ns = 0;
    bool kill_sent = false;
    bool stopped = false;
    uint64_t stopped_since_ns = 0, stopped_total_ns = 0, cont_due_ns = 0;
    bool hung = false; // overdue or stuck: reported and killed by the harness
};

// What happened during the run, for the report.
struct RunStats {
    std::array<uint64_t, kOpCount> ops{};
    int spawned = 0, finished = 0, finished_late = 0;
    int never_killed = 0, never_killed_ok = 0; // members the killer never SIGKILLed
    int killed = 0, killed_in_lock = 0;
    int stopped = 0, stopped_in_lock = 0, continued = 0;
    int snipes = 0, snipes_missed = 0;
    int sweeps = 0;
    uint64_t slowest_finish_ns = 0; // past lifetime + stops, of a never-killed member
};

class Harness {
  public:
    explicit Harness(const Options& options);
    ~Harness();
    Harness(const Harness&) = delete;
    Harness& operator=(const Harness&) = delete;

    // Runs the whole torture; returns the process exit code (0: passed).
    int run();

    // Asks a running run() to end early (from a signal handler).
    static void interrupt() { interrupted_.store(true, std::memory_order_relaxed); }

  private:
    bool setup();
    bool map_segment();
    MemberProc* spawn(bool sweep);
    // Collects members that exited and accounts for them.
    void reap();
    void on_exit(MemberProc& m, int status, uint64_t now);
    void fail(const std::string& what);
    void fail_member(const MemberProc& m, const std::string& what);

    // Disruptions.
    void disrupt(uint64_t now);
    void kill_member(MemberProc& m, bool in_lock);
    void stop_member(MemberProc& m, uint64_t now, uint32_t for_ms);
    void cont_member(MemberProc& m, uint64_t now);
    void continue_due(uint64_t now);
    // Waits for a member inside the segment lock and stops it there; then
    // kills it or lets it go later. False if none was seen in time.
    bool snipe(uint64_t now);
    MemberProc* member_of_tid(pid_t tid);
    MemberProc* random_member(bool not_stopped);

    void check_hung(uint64_t now);
    void report_hung(MemberProc& m);
    bool wait_all_exited(uint64_t give_up_ns);
    // Bursts (Options::burst): one runs at a time, as a child process.
    void start_burst(uint64_t now);
    void on_burst_exit(int status);
    // Waits for a running burst to end; false if it had to be killed.
    bool wait_burst(uint64_t give_up_ns);
    void final_check();
    void print_report();
    void cleanup();
    size_t alive_workers() const;

    Options o_;
    std::mt19937_64 rng_;
    std::string exe_;
    std::string name_; // shared_memory.name
    shm::SegmentOptions seg_options_;
    shm::SegmentMapping seg_;
    int board_fd_ = -1;
    Board* board_ = nullptr;
    std::vector<bool> slot_used_;
    std::vector<std::unique_ptr<MemberProc>> members_;
    int next_serial_ = 1;
    Timeline timeline_;
    std::unique_ptr<Checker> checker_;
    RunStats stats_;
    std::vector<std::string> failures_;
    int final_lost_ = 0;
    uint64_t recoveries_ = 0; // repairs after a lock holder died (segment header)
    std::vector<std::string> final_violations_;
    pid_t burst_pid_ = 0; // the running burst, or 0
    std::unique_ptr<OutputCapture> burst_out_;
    uint64_t next_burst_ns_ = 0;
    uint64_t burst_bound_ms_ = 0;
    int bursts_ = 0;
    double burst_max_wait_ms_ = 0; // the longest wait of a burst's task for a CPU
    bool segment_left_ = false;
    uint64_t start_ns_ = 0;
    uint64_t next_disrupt_ns_ = 0;

    static std::atomic<bool> interrupted_;
};

} // namespace coexec::torture
