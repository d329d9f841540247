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
    const int cpus = std::clamp(s_.header.cpu_count, 0, kMaxCpus);
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
    const ProcSlot& p = s_.procs[oldest];
    return process_alive(p.pid, p.start_time);
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
    const DeadMember m{p, slot.pid, slot.start_time};
    if (!process_alive(m.pid, m.start_time)) dead.push_back(m);
}

bool MemberWatch::claim_interval(std::atomic<uint64_t>& mark, uint64_t now, uint64_t interval_ns) {
    uint64_t seen = mark.load(rlx);
    // Compare-exchange: of the callers that find the interval over, one
    // moves the mark and does the work; the others neither do it nor take
    // the lock for it. (`now` may predate a mark another process just set.)
    return now >= seen && now - seen >= interval_ns && mark.compare_exchange_strong(seen, now, rlx);
}

} // namespace coexec::scheduler
