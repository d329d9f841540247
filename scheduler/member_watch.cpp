#include "scheduler/member_watch.hpp"

#include "scheduler/alive_list.hpp"
#include "shm/liveness.hpp"

#include <algorithm>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

void MemberWatch::beat(int32_t proc, uint64_t now) {
    s_.procs[proc].alive_ns.store(now, rlx);
}

void MemberWatch::monitor_started(int32_t proc, pid_t tid) {
    s_.procs[proc].monitor_tid.store(tid, rlx);
}

void MemberWatch::monitor_ends(int32_t proc) {
    // Release, before the thread ends: a look-up that finds the thread gone
    // and then reads the word again (acquire) reads 0 (look_up()).
    s_.procs[proc].monitor_tid.store(0, std::memory_order_release);
}

DeadMembers MemberWatch::remnants_of(pid_t pid, uint64_t start_time) const {
    DeadMembers left;
    // Lock-free walk, as find_dead(): reap() frees a member only if its
    // slot still names it, under the lock.
    any_alive(s_.header, [&](int32_t p) {
        const ProcSlot& slot = s_.procs[p];
        // The identity asked for, not the slot's again: a slot freed and
        // taken by another process meanwhile must not be named.
        if (slot.pid == pid && slot.start_time == start_time) left.push_back({p, pid, start_time});
        return false;
    });
    return left;
}

DeadMembers MemberWatch::find_dead(uint64_t now, uint64_t fresh_ns) {
    DeadMembers dead;
    // Lock-free walk: a stale list only misses a member until the next
    // sweep, or names one that reap() then finds changed.
    any_alive(s_.header, [&](int32_t p) {
        look_up(p, now, fresh_ns, dead);
        return false; // every member counts
    });
    return dead;
}

DeadMembers MemberWatch::dead_holders(int32_t self, uint64_t now, uint64_t stale_ns) {
    // Relaxed reads throughout: a stale view only delays the look-up by a
    // monitor period, or costs one /proc read too many; reap() decides
    // under the lock.
    DeadMembers dead;
    const int cpus = std::clamp(s_.header.cpu_count, 0, s_.header.max_cpus);
    for (int c = 0; c < cpus; ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        if (cpu.state.load(rlx) != CpuState::Running) continue;
        const int32_t p = cpu.owner_proc.load(rlx);
        if (p < 0 || p >= kMaxProcs || p == self) continue;
        look_up(p, now, stale_ns, dead);
    }
    return dead;
}

bool MemberWatch::oldest_member_alive() const {
    // Lock-free: a stale read only sweeps once more, or once less until
    // the next interval.
    const Header& h = s_.header;
    if (h.alive_count <= 0) return false;
    const int32_t oldest = h.alive[0];
    if (oldest < 0 || oldest >= kMaxProcs) return false;
    return member_alive(s_.procs[oldest]);
}

bool MemberWatch::claim_reap(uint64_t now, uint64_t interval_ns) {
    return claim_interval(s_.header.last_reap_ns, now, interval_ns);
}

void MemberWatch::reap_soon() {
    s_.header.last_reap_ns.store(0, rlx);
}

bool MemberWatch::claim_entry_check(uint64_t now) {
    return claim_interval(s_.header.last_entry_check_ns, now, kEntryCheckIntervalNs);
}

void MemberWatch::look_up(int32_t p, uint64_t now, uint64_t stale_ns, DeadMembers& dead) {
    ProcSlot& slot = s_.procs[p];
    uint64_t seen = slot.alive_ns.load(rlx);
    if (stale_ns != 0 && (now < seen || now - seen < stale_ns)) return;
    // One caller per stale period reads /proc for this member: the others
    // see the beat moved and skip it. A member found alive stays vouched
    // for until its beat goes stale again.
    if (now > seen && !slot.alive_ns.compare_exchange_strong(seen, now, rlx) && stale_ns != 0)
        return;
    // The identity is read once, and the verdict names it: the slot may be
    // freed and taken by another process while /proc is read (a member
    // that left, then a new one), and reap() frees only a slot that still
    // names the identity found dead. Naming the slot's identity as read
    // again after the look-up once freed the live newcomer instead.
    const pid_t pid = slot.pid;
    const uint64_t start_time = slot.start_time;
    if (!alive(slot, pid, start_time)) dead.push_back({p, pid, start_time});
}

bool MemberWatch::member_alive(const ProcSlot& slot) {
    return alive(slot, slot.pid, slot.start_time);
}

bool MemberWatch::alive(const ProcSlot& slot, pid_t pid, uint64_t start_time) {
    return process_alive(pid, start_time) && image_alive(slot, pid);
}

bool MemberWatch::image_alive(const ProcSlot& slot, pid_t pid) {
    // Relaxed first read: a monitor that starts after it only leaves the
    // process to be trusted as a whole, as before its monitor ran.
    const pid_t monitor = slot.monitor_tid.load(rlx);
    if (monitor <= 0 || thread_alive(pid, monitor)) return true;
    // The monitor is gone. It clears the word before it ends when the
    // process stops (monitor_ends(), release); a word still naming it after
    // the thread is gone (acquire) means the thread ended without doing so:
    // execve() ended it, with the image that registered.
    return slot.monitor_tid.load(std::memory_order_acquire) != monitor;
}

bool MemberWatch::claim_interval(std::atomic<uint64_t>& mark, uint64_t now, uint64_t interval_ns) {
    uint64_t seen = mark.load(rlx);
    // Compare-exchange: of the callers that find the interval over, one
    // moves the mark and does the work; the others neither do it nor take
    // the lock for it. (`now` may predate a mark another process just set.)
    return now >= seen && now - seen >= interval_ns && mark.compare_exchange_strong(seen, now, rlx);
}

} // namespace coexec::scheduler
