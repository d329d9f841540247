// coexec-torture: N member processes x M threads do random operations
// through the public C API while the harness kills, stops and continues them
// at random and checks the shared segment's invariants all along.
// `coexec-torture member ...` is how the harness starts a member.
#include "harness.hpp"
#include "member.hpp"
#include "options.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>

namespace {

void on_interrupt(int) {
    coexec::torture::Harness::interrupt();
}

} // namespace

int main(int argc, char** argv) {
    using coexec::torture::MemberArgs;
    using coexec::torture::Options;
    Options o;
    MemberArgs member;
    CLI::App app{"coexec-torture: processes and threads doing random coexec operations while "
                 "a killer SIGKILLs, SIGSTOPs and SIGCONTs them; checks the segment's "
                 "invariants all along"};
    app.add_option("--procs", o.procs, "member processes alive at once")->check(CLI::Range(1, 64));
    app.add_option("--threads", o.threads, "driver threads per member")->check(CLI::Range(1, 32));
    app.add_option("--seconds", o.seconds, "how long members are started and disrupted")
        ->check(CLI::Range(0.1, 86400.0));
    app.add_option("--seed", o.seed, "random seed (default: from the clock; printed)");
    app.add_option("--kill-rate", o.kill_rate,
                   "disruptions per second: 40% SIGKILL, 40% SIGSTOP, 20% aimed at a member "
                   "inside the segment lock (then SIGKILL or SIGSTOP)")
        ->check(CLI::Range(0.0, 1000.0));
    app.add_option("--stop-max-ms", o.stop_max_ms, "longest SIGSTOP before its SIGCONT")
        ->check(CLI::Range(1, 10000));
    app.add_option("--lost-ms", o.lost_ms,
                   "a CPU still Running for a dead member this long (counting only time in which a "
                   "live member had work for it and no member was stopped) is lost")
        ->check(CLI::Range(1, 100000));
    app.add_option("--check-min-ms", o.check_min_ms, "shortest gap between invariant checks")
        ->check(CLI::Range(1, 10000));
    app.add_option("--check-max-ms", o.check_max_ms, "longest gap between invariant checks")
        ->check(CLI::Range(1, 10000));
    app.add_option("--life-min-ms", o.life_min_ms, "shortest member lifetime")
        ->check(CLI::Range(1, 3600000));
    app.add_option("--life-max-ms", o.life_max_ms, "longest member lifetime")
        ->check(CLI::Range(1, 3600000));
    app.add_option("--finish-ms", o.finish_ms,
                   "a never-killed member must exit this long after its lifetime (plus stops)")
        ->check(CLI::Range(100, 3600000));
    app.add_flag("--verbose", o.verbose, "print every spawn, exit and disruption");
    app.add_option("--burst", o.burst,
                   "processes in each burst beside the members (0: none); at most the process "
                   "table's size less --procs")
        ->check(CLI::Range(0, 508));
    app.add_option("--burst-every-ms", o.burst_every_ms, "time between the bursts' starts")
        ->check(CLI::Range(100, 3600000));
    app.add_option("--burst-busy", o.burst_busy, "unmanaged busy threads in each burst process")
        ->check(CLI::Range(0, 64));
    app.add_option("--burst-program", o.burst_program,
                   "path of coexec-bench-many-procs, which runs each burst")
        ->check(CLI::ExistingFile);

    CLI::App* sub = app.add_subcommand("member", "(internal) run as one member of a torture run");
    sub->group(""); // hidden from --help
    sub->add_option("--board-fd", member.board_fd)->required();
    sub->add_option("--slot", member.slot)->required();
    sub->add_option("--threads", member.work.threads)->required();
    sub->add_option("--seed", member.work.seed)->required();
    sub->add_option("--lifetime-ms", member.work.lifetime_ms)->required();
    sub->add_option("--rounds", member.work.rounds)->required();
    sub->add_option("--drain-ms", member.work.drain_ms)->required();
    sub->add_option("--parent", member.parent)->required();
    sub->add_flag("--sweep", member.sweep);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (sub->parsed()) {
        member.work.wait_when_stuck = true; // the harness looks, then kills
        return coexec::torture::run_member(member);
    }

    if (o.check_min_ms > o.check_max_ms || o.life_min_ms > o.life_max_ms) {
        std::fprintf(stderr, "coexec-torture: a --*-min-ms is larger than its --*-max-ms\n");
        return 2;
    }
    if (o.seed == 0)
        o.seed = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    std::signal(SIGPIPE, SIG_IGN);
    coexec::torture::Harness harness(o);
    return harness.run();
}
