// OS floor for the hand-off benchmarks, without coexec: two players pinned
// with sched_setaffinity to one CPU pass the turn counter and sleep on it as
// a process-shared futex (the kind the substrate uses), so each hand-off is
// one futex wake plus one context switch on that CPU. Players are two threads
// of one process (floor for the same-CPU hand-off) or two processes (floor
// for the cross-process one).
#include "benchmarks.hpp"
#include "nosv_util.hpp"
#include "turn_game.hpp"

#include <sched.h>

#include <thread>

namespace coexec::bench {
namespace {

// The CPU both players are pinned to: --cpu, or the first one this process may use.
int pinned_cpu(const Options& options) {
    cpu_set_t allowed;
    if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) fail("sched_getaffinity failed");
    if (options.cpu) {
        if (*options.cpu >= CPU_SETSIZE || !CPU_ISSET(*options.cpu, &allowed))
            fail("--cpu " + std::to_string(*options.cpu) + " is not usable by this process");
        return *options.cpu;
    }
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) return c;
    fail("no usable CPU");
}

void pin_calling_thread(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) fail("sched_setaffinity failed");
}

// One player: passes the turn `passes` times, sleeping on the futex between.
void play(Court& court, int me, int cpu, int64_t per_repeat, int64_t passes) {
    pin_calling_thread(cpu);
    PassClock clock(per_repeat, court.samples);
    for (int64_t k = 0; k < passes; ++k) {
        const uint32_t turn = uint32_t(2 * k + me);
        futex_await_turn(court, turn);
        if (::sched_getcpu() != cpu) court.wrong_cpu.fetch_add(1, std::memory_order_relaxed);
        if (me == 0) clock.on_pass(k);
        court.turn.store(turn + 1, std::memory_order_release); // pairs with the acquire load
        futex_wake_all(court.turn);
    }
}

// One relay player: like play(), but it sleeps on a word of its own process
// between passes, and a plain watcher thread of the process (not pinned)
// sleeps on the counter and wakes it when its turn comes: the relay the
// coexec cross-process benchmark uses, with the kernel in coexec's place.
void relay_play(Court& court, int me, int cpu, int64_t per_repeat, int64_t passes) {
    std::atomic<uint32_t> released{0}; // turns the watcher has released so far
    std::thread watcher([&] {
        for (int64_t k = 0; k < passes; ++k) {
            futex_await_turn(court, uint32_t(2 * k + me));
            released.store(uint32_t(k + 1), std::memory_order_release);
            futex_wake_all(released);
        }
    });
    pin_calling_thread(cpu);
    PassClock clock(per_repeat, court.samples);
    for (int64_t k = 0; k < passes; ++k) {
        // Acquire pairs with the watcher's release store.
        for (uint32_t seen; (seen = released.load(std::memory_order_acquire)) <= uint32_t(k);)
            futex_wait_while(released, seen);
        const uint32_t turn = uint32_t(2 * k + me);
        if (court.turn.load(std::memory_order_acquire) != turn) fail("OS relay: woken out of turn");
        if (::sched_getcpu() != cpu) court.wrong_cpu.fetch_add(1, std::memory_order_relaxed);
        if (me == 0) clock.on_pass(k);
        court.turn.store(turn + 1, std::memory_order_release);
        futex_wake_all(court.turn);
    }
    watcher.join();
}

Outcome collect(const Court& court, std::string error) {
    if (error.empty() && court.wrong_cpu.load(std::memory_order_relaxed) != 0)
        error = "pinned players ran off their CPU";
    Outcome outcome;
    outcome.error = std::move(error);
    if (outcome.error.empty()) outcome.samples = court.samples.samples();
    return outcome;
}

// Two player processes pinned to one CPU, each running `player`.
Outcome measure_two_processes(const Options& options,
                              void (*player)(Court&, int, int, int64_t, int64_t)) {
    SharedObject<Court> court;
    ChildGroup players;
    const int cpu = pinned_cpu(options);
    const int64_t passes = pass_count(options, options.round_trips);
    for (int me = 0; me < 2; ++me)
        players.spawn([&, me] {
            player(*court, me, cpu, options.round_trips, passes);
            return 0;
        });
    return collect(*court, players.wait_all(std::chrono::seconds(options.timeout_s)));
}

} // namespace

Outcome measure_os_threads(const Options& options) {
    // Run in a child like the coexec benchmarks, so the parent stays unpinned.
    SharedObject<Court> court;
    ChildGroup child;
    child.spawn([&] {
        const int cpu = pinned_cpu(options);
        const int64_t per_repeat = std::max<int64_t>(1, options.handoffs / 2);
        const int64_t passes = pass_count(options, per_repeat);
        std::thread other(play, std::ref(*court), 1, cpu, per_repeat, passes);
        play(*court, 0, cpu, per_repeat, passes);
        other.join();
        return 0;
    });
    return collect(*court, child.wait_all(std::chrono::seconds(options.timeout_s)));
}

Outcome measure_os_processes(const Options& options) {
    return measure_two_processes(options, play);
}

Outcome measure_os_relay(const Options& options) {
    return measure_two_processes(options, relay_play);
}

} // namespace coexec::bench
