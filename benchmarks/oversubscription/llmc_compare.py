#!/usr/bin/env python3
"""Runs coexec's GPT-2 trainer and llm.c's train_gpt2.c side by side, from the same checkpoint.

Given a checkout of https://github.com/karpathy/llm.c (--llmc PATH; MIT-licensed, never
copied into this repository), the script
  1. builds llm.c's train_gpt2.c with its Makefile's CPU flags (-Ofast, OpenMP), at the
     -march given by --march (the Makefile's own is native), into a work directory;
  2. builds our trainer (benchmarks/oversubscription/gpt2) with the flags CMake uses, at
     the same -march, unless --gpt2 BIN names a built one;
  3. has our trainer write a random model in llm.c's checkpoint format (after one AdamW
     step) and a token file in llm.c's format holding exactly one batch, B*T+1 tokens, so
     both trainers (llm.c shuffles its batches, ours reads them in order) train on the
     same batch every step; llm.c finds them under the names its main() opens
     (gpt2_124M.bin, dev/data/tinyshakespeare/tiny_shakespeare_{train,val}.bin), with no
     tokenizer (it prints a warning and carries on);
  4. runs them in turn, ours then llm.c, --rounds times, with the same OMP_NUM_THREADS;
  5. prints the losses side by side (they must agree: exit status 1 if one differs by
     more than --loss-tol relative) and each trainer's step time: the median of every
     step but each run's first (warm-up), with min, max and quartiles, and the ratio
     ours / llm.c of the medians, with the range of the per-round ratios.

llm.c's main() trains with B=4, T=64 for 41 steps and samples text at step 20; the script
stops it after --steps steps (at most 20). Without --llmc it prints what it needs and
"skipped: <reason>", and exits 0.

Examples:
  llmc_compare.py --llmc ~/llm.c                          # runner's shape, -march=native
  llmc_compare.py --llmc ~/llm.c --march x86-64-v3        # the AVX2 code of both
  llmc_compare.py --llmc ~/llm.c --preset 124m --steps 4 --rounds 2   # GPT-2 124M shape
"""
import argparse
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402  (the runner: remove_kmp_registrations)
B, T = 4, 64  # fixed in llm.c's train_gpt2.c main()
# llm.c's Makefile: CFLAGS, then CFLAGS_COND (-march=native) and OpenMP for gcc/clang on Linux.
LLMC_CFLAGS = ["-Ofast", "-Wno-unused-result", "-Wno-ignored-pragmas", "-Wno-unknown-attributes"]
LLMC_OMP = ["-fopenmp", "-DOMP"]
LLMC_LIBS = ["-lm", "-lgomp"]
# benchmarks/oversubscription/CMakeLists.txt: bench_flags and bench_flags_gpt2.
OUR_FLAGS = ["-std=c++20", "-O2", "-fopenmp", "-ffp-contract=fast", "-fno-math-errno"]
PRESETS = {
    # run.py's GPT-2 shape (its "everyday" scenarios)
    "runner": dict(layers=2, heads=4, channels=128, vocab=4096, max_seq=64),
    # the runner's shape with GPT-2's vocabulary (the output matmul dominates)
    "vocab50257": dict(layers=2, heads=4, channels=128, vocab=50257, max_seq=64),
    # GPT-2 124M, llm.c's default model
    "124m": dict(layers=12, heads=12, channels=768, vocab=50257, max_seq=1024),
}
STEP = re.compile(r"^step (\d+): train loss (\S+) \(took (\S+) ms\)")


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(0)


def run_checked(cmd, **kw):
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"llmc_compare: command failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def build_llmc(args, work):
    src = args.llmc / "train_gpt2.c"
    out = work / "train_gpt2"
    flags = LLMC_CFLAGS + [f"-march={args.march}"] + LLMC_OMP
    print(f"llm.c: {args.cc} {' '.join(flags)} train_gpt2.c {' '.join(LLMC_LIBS)}"
          f"  (its Makefile's CPU flags{'' if args.march == 'native' else ', -march=native replaced'})")
    run_checked([args.cc, *flags, src, *LLMC_LIBS, "-o", out])
    return out


def build_ours(args, work):
    if args.gpt2:
        print(f"ours: {args.gpt2} (built elsewhere; its -march is whatever it was built with)")
        return args.gpt2
    sources = sorted((HERE / "gpt2").glob("*.cpp")) + sorted((HERE / "common").glob("*.cpp"))
    out = work / "gpt2"
    flags = OUR_FLAGS + [f"-march={args.march}"]
    print(f"ours: {args.cxx} {' '.join(flags)} gpt2/*.cpp common/*.cpp"
          "  (CMake's flags for the GPT-2 benchmark)")
    run_checked([args.cxx, *flags, *sources, "-o", out, "-ltbb", "-lOpenCL", "-lpthread"])
    return out


def write_one_batch(src, dst):
    """Copies llm.c token file src to dst, keeping its first B*T+1 tokens."""
    data = src.read_bytes()
    header = list(struct.unpack("<256i", data[:1024]))
    n = B * T + 1
    if header[2] < n:
        sys.exit(f"llmc_compare: {src} holds {header[2]} tokens, fewer than {n}")
    header[2] = n
    dst.write_bytes(struct.pack("<256i", *header) + data[1024:1024 + 2 * n])


def prepare_inputs(args, ours, work):
    shape = args.shape
    ckpt, tokens, stream = work / "model.bin", work / "tokens.bin", work / "stream.bin"
    run_checked([ours, "--layers", shape["layers"], "--heads", shape["heads"],
                 "--channels", shape["channels"], "--vocab", shape["vocab"],
                 "--max-seq", shape["max_seq"], "--batch", B, "--seq", T, "--steps", 1,
                 "--seed", args.seed, "--save", ckpt, "--write-tokens", stream],
                env=dict(os.environ, OMP_NUM_THREADS=str(args.threads)))
    write_one_batch(stream, tokens)
    # llm.c's main() opens these names in its working directory.
    run_dir = work / "llmc-run"
    data = run_dir / "dev" / "data" / "tinyshakespeare"
    data.mkdir(parents=True, exist_ok=True)
    for link, target in [(run_dir / "gpt2_124M.bin", ckpt),
                         (data / "tiny_shakespeare_train.bin", tokens),
                         (data / "tiny_shakespeare_val.bin", tokens)]:
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(target)
    return ckpt, tokens, run_dir


def collect(cmd, cwd, env, steps):
    """Runs cmd until it has printed `steps` step lines; returns [(loss, ms)]."""
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    got, lines = [], []
    for line in proc.stdout:
        lines.append(line)
        m = STEP.match(line)
        if m:
            got.append((float(m.group(2)), float(m.group(3))))
            if len(got) == steps:
                break
    stopped = len(got) == steps and proc.poll() is None
    if stopped:
        proc.terminate()  # llm.c would train 41 steps and sample text
    proc.stdout.close()
    proc.wait()
    if stopped:  # built with clang, its libomp left its /dev/shm registration
        run.remove_kmp_registrations([proc.pid])
    if len(got) < steps:
        sys.exit(f"llmc_compare: {cmd[0]} stopped after {len(got)} steps:\n" + "".join(lines[-30:]))
    return got


def spread(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return (f"median {statistics.median(xs):8.2f} ms  min {xs[0]:8.2f}  q1 {q[0]:8.2f}  "
            f"q3 {q[2]:8.2f}  max {xs[-1]:8.2f}  ({len(xs)} steps)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--llmc", type=Path, help="checkout of karpathy/llm.c (with train_gpt2.c)")
    p.add_argument("--march", default="native",
                   help="-march for both builds (default native, as llm.c's Makefile)")
    p.add_argument("--cc", default="cc", help="llm.c's compiler (default cc, as its Makefile)")
    p.add_argument("--cxx", default="g++", help="our compiler (default g++; clang++ also built)")
    p.add_argument("--gpt2", type=Path, help="use this built gpt2 binary instead of building one")
    p.add_argument("--preset", choices=sorted(PRESETS), default="runner",
                   help="model shape (default runner: 2 layers, 4 heads, 128 channels, "
                        "vocabulary 4096, max-seq 64)")
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                   help="OMP_NUM_THREADS of both (default: the CPUs this may use)")
    p.add_argument("--steps", type=int, default=10, help="steps per run, at most 20 (default 10)")
    p.add_argument("--rounds", type=int, default=3, help="runs of each, alternating (default 3)")
    p.add_argument("--mode", default="forkjoin", help="our --mode (default forkjoin)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--loss-tol", type=float, default=1e-3,
                   help="largest relative loss difference accepted (default 1e-3)")
    p.add_argument("--workdir", type=Path, help="keep the builds and files here (default: temp)")
    args = p.parse_args()

    if args.llmc is None:
        print(__doc__.split("\n\n")[1])
        skip("no llm.c checkout given (--llmc PATH; git clone https://github.com/karpathy/llm.c)")
    args.llmc = args.llmc.expanduser().resolve()
    if not (args.llmc / "train_gpt2.c").is_file():
        skip(f"{args.llmc} has no train_gpt2.c: not an llm.c checkout")
    for tool in (args.cc, None if args.gpt2 else args.cxx):
        if tool and not shutil.which(tool):
            skip(f"compiler {tool} not found")
    if not 2 <= args.steps <= 20:
        p.error("--steps must be in [2, 20] (llm.c samples text at step 20)")
    if args.rounds < 1 or args.threads < 1:
        p.error("--rounds and --threads must be >= 1")
    args.shape = PRESETS[args.preset]

    tmp = None
    if args.workdir:
        work = args.workdir.resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="llmc_compare.")
        work = Path(tmp.name)
    try:
        return compare(args, work)
    finally:
        if tmp:
            tmp.cleanup()


def compare(args, work):
    llmc = build_llmc(args, work)
    ours = build_ours(args, work)
    ckpt, tokens, run_dir = prepare_inputs(args, ours, work)
    s = args.shape
    print(f"shape: {s['layers']} layers, {s['heads']} heads, {s['channels']} channels, "
          f"vocabulary {s['vocab']}, max-seq {s['max_seq']}; B={B} T={T}; "
          f"OMP_NUM_THREADS={args.threads}; our --mode {args.mode}", flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    our_cmd = [ours, "--load", ckpt, "--tokens", tokens, "--batch", B, "--seq", T,
               "--steps", args.steps, "--mode", args.mode]
    runs = {"ours": [], "llm.c": []}
    for r in range(args.rounds):
        runs["ours"].append(collect(our_cmd, work, env, args.steps))
        runs["llm.c"].append(collect([llmc], run_dir, env, args.steps))

    print("\nlosses (round 1; every step trains on the same batch):")
    print(f"{'step':>4}  {'ours':>10}  {'llm.c':>10}  {'rel. diff':>9}")
    worst = 0.0
    for step in range(args.steps):
        for r in range(args.rounds):
            a, b = runs["ours"][r][step][0], runs["llm.c"][r][step][0]
            diff = abs(a - b) / max(abs(b), 1e-30)
            worst = max(worst, diff)
            if r == 0:
                print(f"{step:>4}  {a:10.6f}  {b:10.6f}  {diff:9.1e}")
    print(f"largest relative loss difference, all rounds: {worst:.1e}")

    print("\nstep times (each run's step 0 left out):")
    med = {}
    for name, rs in runs.items():
        times = [ms for run in rs for _, ms in run[1:]]
        med[name] = statistics.median(times)
        print(f"  {name:6} {spread(times)}")
    per_round = [statistics.median(ms for _, ms in o[1:]) / statistics.median(ms for _, ms in l[1:])
                 for o, l in zip(runs["ours"], runs["llm.c"])]
    print(f"ratio ours/llm.c: {med['ours'] / med['llm.c']:.2f}"
          f"  (per round {min(per_round):.2f}-{max(per_round):.2f}; -march={args.march}, "
          f"{args.threads} threads)")
    if worst > args.loss_tol:
        print(f"losses differ by more than {args.loss_tol:g} relative", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
