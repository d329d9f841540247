#!/usr/bin/python3
"""GROMACS (Debian's `gromacs`, unmodified) running a small water box.

    gromacs.py --threads N [--steps K] [--box NM] [--ranks R] [--bind none|core]
               [--workdir DIR] [--keep]

Makes its own input once and caches it in the scratch folder (--workdir,
$COEXEC_APPS_DIR, or /tmp/coexec-apps-<uid>): a cubic box of SPC/E water
(`gmx solvate -cs spc216.gro -box NM`, OPLS-AA), minimised by steepest
descent, then `gmx grompp` of an NVT run with PME (v-rescale, fixed seeds).

--ranks 0 (default): one `gmx mdrun -ntmpi 1 -ntomp N -pin off -nb cpu -reprod`.
--ranks R: the hybrid MPI+OpenMP run, `mpirun -np R --bind-to <bind>
gmx_mpi mdrun -ntomp N -npme 0 -dd R 1 1 ...`: R domains that swap their halo
atoms every step over Open MPI, each with N OpenMP threads.

steady_seconds: mdrun's own wall time of the MD loop (the log's `Time:` line).
result: the first 16 hex digits of the SHA-256 of the energy file (every
energy term, in binary, each nstenergy steps) and the final coordinates.
With -reprod and the same N and R, GROMACS is bit-reproducible.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import appcommon as ac  # noqa: E402

NAME = "gromacs"

TOPOLOGY = """#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spce.itp"
[ system ]
water box
[ molecules ]
SOL {waters}
"""

NONBONDED = """cutoff-scheme = Verlet
coulombtype = PME
rcoulomb = 1.0
rvdw = 1.0
"""

EM_MDP = """integrator = steep
nsteps = 500
emtol = 1000
""" + NONBONDED

MD_MDP = """integrator = md
dt = 0.002
nsteps = 500
tcoupl = v-rescale
tc-grps = System
tau_t = 0.1
ref_t = 300
ld_seed = 1
gen_vel = yes
gen_temp = 300
gen_seed = 1
nstcalcenergy = 100
nstenergy = 100
nstlog = 0
""" + NONBONDED


def make_input(gmx, box):
    def build(d):
        def gmx_in(*args):
            return ac.run(NAME, [gmx, "-quiet", "-nocopyright", *args], cwd=d)

        gmx_in("solvate", "-cs", "spc216.gro", "-box", str(box), str(box), str(box), "-o", "conf.gro")
        with open(os.path.join(d, "conf.gro")) as f:
            f.readline()
            waters = int(f.readline()) // 3
        with open(os.path.join(d, "topol.top"), "w") as f:
            f.write(TOPOLOGY.format(waters=waters))
        with open(os.path.join(d, "em.mdp"), "w") as f:
            f.write(EM_MDP)
        with open(os.path.join(d, "md.mdp"), "w") as f:
            f.write(MD_MDP)
        gmx_in("grompp", "-f", "em.mdp", "-c", "conf.gro", "-p", "topol.top", "-o", "em.tpr")
        gmx_in("mdrun", "-s", "em.tpr", "-deffnm", "em", "-ntmpi", "1", "-ntomp", "1", "-pin", "off")
        gmx_in("grompp", "-f", "md.mdp", "-c", "em.gro", "-p", "topol.top", "-o", "md.tpr")
        with open(os.path.join(d, "waters"), "w") as f:
            f.write(f"{waters}\n")

    return build


def main(argv=None, default_ranks=0, name=NAME):
    global NAME
    NAME = name
    ap = argparse.ArgumentParser(prog=name, description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int,
                    help="OpenMP threads per mdrun process (-ntomp; default: the CPUs over the processes)")
    ap.add_argument("--steps", type=int, default=1500, help="MD steps (default 1500)")
    ap.add_argument("--box", type=float, default=3.0, help="edge of the water box in nm (default 3)")
    ap.add_argument("--ranks", type=int, default=default_ranks,
                    help="0: gmx, one process; R>0: mpirun -np R gmx_mpi (default %(default)s)")
    ap.add_argument("--bind", choices=["none", "core"], default="none",
                    help="mpirun's --bind-to, the same in every mode (default none)")
    ap.add_argument("--workdir", help="scratch folder (input cache and runs)")
    ap.add_argument("--keep", action="store_true", help="keep the run's folder")
    a = ap.parse_args(argv)
    if a.threads is None:
        a.threads = max(1, (os.cpu_count() or 1) // max(1, a.ranks))
    if a.threads < 1 or a.steps < 1 or a.ranks < 0:
        ac.fail(NAME, "--threads and --steps must be positive, --ranks not negative")

    gmx = ac.need(NAME, "gmx", "gromacs")
    root = ac.scratch_root(a.workdir)
    inp = ac.cached(root, f"gromacs-water-{a.box:g}nm", make_input(gmx, a.box))
    rundir = tempfile.mkdtemp(prefix="gromacs-run.", dir=root)
    try:
        mdrun = ["mdrun", "-s", os.path.join(inp, "md.tpr"), "-deffnm", "md", "-nsteps", str(a.steps),
                 "-ntomp", str(a.threads), "-pin", "off", "-nb", "cpu", "-reprod"]
        if a.ranks == 0:
            argv = [gmx, "-quiet", "-nocopyright", *mdrun, "-ntmpi", "1"]
        else:
            mpirun = ac.need(NAME, "mpirun", "openmpi-bin")
            gmx_mpi = ac.need(NAME, "gmx_mpi", "gromacs")
            argv = [mpirun, "-np", str(a.ranks), "--bind-to", a.bind, "--oversubscribe",
                    "--allow-run-as-root", gmx_mpi, "-quiet", "-nocopyright", *mdrun,
                    "-npme", "0", "-dd", str(a.ranks), "1", "1"]
        ac.run(NAME, argv, cwd=rundir)
        with open(os.path.join(rundir, "md.log")) as f:
            log = f.read()
        m = re.search(r"^\s*Time:\s+(\S+)\s+(\S+)", log, re.M)
        if not m:
            ac.fail(NAME, f"no `Time:` line in {rundir}/md.log")
        if a.ranks and not re.search(rf"Domain decomposition grid {a.ranks} x 1 x 1", log):
            ac.fail(NAME, f"md.log does not show a {a.ranks} x 1 x 1 domain decomposition")
        with open(os.path.join(inp, "waters")) as f:
            waters = int(f.read())
        digest = ac.sha16(os.path.join(rundir, "md.edr"), os.path.join(rundir, "md.gro"))
        ac.report(float(m.group(2)), digest, app=f"gmx mdrun, {waters} waters, {a.steps} steps,"
                  f" {a.ranks or 1} process(es) x {a.threads} OpenMP threads")
    finally:
        if not a.keep:
            shutil.rmtree(rundir, ignore_errors=True)
        else:
            print(f"rundir {rundir}")


if __name__ == "__main__":
    main()
