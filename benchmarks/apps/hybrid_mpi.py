#!/usr/bin/python3
"""The hybrid MPI+OpenMP driver: GROMACS's MPI build (Debian's `gmx_mpi`,
unmodified) with domain decomposition, whose ranks exchange halo atoms over
Open MPI every step, each rank with its OpenMP threads.

    hybrid_mpi.py --threads N [--ranks R (default 2)] [--bind none|core]
                  [--steps K] [--box NM] [--workdir DIR] [--keep]

is `gromacs.py --ranks 2 ...`; see gromacs.py for the input, the timing and
the result.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gromacs  # noqa: E402

if __name__ == "__main__":
    gromacs.main(default_ranks=2, name="hybrid_mpi")
