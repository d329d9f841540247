// Whether the segment's members still run: their beats, the /proc look-ups
// that find the dead ones, and the system-wide elections that keep those
// look-ups (and the entry check) rare. Lock-free throughout; freeing what a
// dead member held is SharedScheduler::reap()'s, under the lock. The only
// writer of ProcSlot::alive_ns and ProcSlot::monitor_tid after
// registration, and of the reap and entry-check marks but for reap()'s own.
//
// A member is dead when its process is gone (its pid no longer names the
// process that started at its start time), and also when the process
// replaced its image with execve(): the pid and start time stay, but every
// thread of the old image is gone, its monitor with it, and what the old
// image held would otherwise stay held for as long as the process runs.
#pragma once

#include "shm/layout.hpp"

#include <atomic>
#include <cstdint>
#include <sys/types.h>
#include <vector>

namespace coexec::scheduler {

// A member found dead by a /proc look-up, named as it was then.
struct DeadMember {
    int32_t proc;
    pid_t pid;
    uint64_t start_time;
};
using DeadMembers = std::vector<DeadMember>;

class MemberWatch {
  public:
    explicit MemberWatch(shm::Segment& segment) : s_(segment) {}

    // How often, system-wide, one member sweeps for dead members
    // (claim_reap()): a sweep reads /proc for every member not known to run
    // (find_dead()).
    static constexpr uint64_t kReapIntervalNs = 40'000'000;
    // A member not known to run for this long, while it holds a CPU that
    // others wait for, is looked up in /proc (dead_holders()).
    static constexpr uint64_t kAliveStaleNs = 30'000'000;
    // How often an entering member checks the whole segment before it
    // trusts it (claim_entry_check()).
    static constexpr uint64_t kEntryCheckIntervalNs = 1'000'000'000;

    // By the process itself (its monitor, once a period): it runs.
    void beat(int32_t proc, uint64_t now);
    // By the monitor thread of `proc` when it starts: from then on the
    // member is alive only while thread `tid` is. And by that thread as its
    // last act when the process stops (monitor_ends()): the process is then
    // alive while it runs, as before its monitor started, until it leaves.
    void monitor_started(int32_t proc, pid_t tid);
    void monitor_ends(int32_t proc);
    // Lock-free, by a process about to register: the members that an
    // earlier image of this very process (`pid` started at `start_time`)
    // left when it called execve(), without a /proc read: one process has
    // one image, so they cannot run. Assumes one membership per process in
    // a segment, which is what the runtime (a process-wide singleton) makes.
    DeadMembers remnants_of(pid_t pid, uint64_t start_time) const;
    // Reads /proc: the members that died. A member whose beat (or another's
    // vouching) is younger than `fresh_ns` at `now` is taken to run and not
    // looked up (0: every member is); one found alive is vouched for, so
    // that the next sweeps skip it for a while. The look-ups cost a system
    // call each, which is why no lock is held: a sweep of 512 members on a
    // busy node took up to seconds, and held every CPU holder that wanted
    // the lock meanwhile.
    DeadMembers find_dead(uint64_t now, uint64_t fresh_ns);
    // The members other than `self` that hold a Running CPU and have died.
    // Only members not known to run for `stale_ns` are looked up in /proc
    // (at most one read per holder); one found alive is vouched for, so the
    // other waiters do not read /proc for it again for a while. Not
    // elected: a dead holder keeps CPUs from everyone, so every waiter
    // looks, and a reaper the kernel does not run delays no one.
    DeadMembers dead_holders(int32_t self, uint64_t now, uint64_t stale_ns);
    // Reads /proc. Whether the member in `slot` still runs: its process
    // (pid and start time) and, within it, the image that joined. What
    // every liveness verdict on a member uses (look-ups, the holder check,
    // `coexec top` and `reset`).
    static bool member_alive(const shm::ProcSlot& slot);
    // Reads /proc. Whether the oldest member still runs: when it does the
    // segment is in use; when it died, a sweep (find_dead()) finds the
    // others.
    bool oldest_member_alive() const;
    // Elects one caller per `interval_ns`, system-wide, to sweep for dead
    // members (find_dead(), then SharedScheduler::reap()): true when no
    // sweep started in the last `interval_ns` and this caller moved the
    // mark first.
    bool claim_reap(uint64_t now, uint64_t interval_ns);
    // Makes the next claim_reap() win at once (a dead lock holder was
    // repaired: its process is to be found).
    void reap_soon();
    // Elects one entering member per kEntryCheckIntervalNs, system-wide, to
    // check every invariant of the segment before it registers (and the
    // first member of a fresh segment). A check reads every slot in use,
    // faulting in its pages: 1.4 ms on average under the lock for each of
    // 512 processes that entered at once, when every entry was checked.
    bool claim_entry_check(uint64_t now);

  private:
    // Appends `p` to `dead` if it died. A member whose beat (or vouching)
    // is younger than `stale_ns` at `now` is not looked up (0: always); of
    // several callers in one stale period, one looks it up and vouches for
    // it.
    void look_up(int32_t p, uint64_t now, uint64_t stale_ns, DeadMembers& dead);
    // member_alive() for the member `pid`, `start_time` that `slot` named
    // when the caller read it.
    static bool alive(const shm::ProcSlot& slot, pid_t pid, uint64_t start_time);
    // Whether the image of the process that registered `slot` still runs,
    // given that the process (`pid`) does: its monitor thread, once it has
    // one, has not ended without saying so (monitor_ends()). Reads /proc.
    static bool image_alive(const shm::ProcSlot& slot, pid_t pid);
    // True when `mark` is at least `interval_ns` before `now` and this
    // caller moved it to `now` first.
    static bool claim_interval(std::atomic<uint64_t>& mark, uint64_t now, uint64_t interval_ns);

    shm::Segment& s_;
};

} // namespace coexec::scheduler
