"""Helpers shared by the drivers in benchmarks/apps (Python 3 standard library only).

Every driver prints `steady_seconds <float>` (the time of the program's main
work, start-up left out) and `result <digest>` (what identifies its output),
exits 0 on success, and on failure prints `<driver>: <why>` on stderr and
exits non-zero.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile


def fail(name, why):
    print(f"{name}: {why}", file=sys.stderr)
    sys.exit(1)


def need(name, program, package):
    path = shutil.which(program)
    if not path:
        fail(name, f"{program} not found (install: apt-get install -y {package})")
    return path


def scratch_root(given):
    """The scratch folder: --workdir, else $COEXEC_APPS_DIR, else /tmp/coexec-apps-<uid>."""
    root = given or os.environ.get("COEXEC_APPS_DIR") or os.path.join(
        tempfile.gettempdir(), f"coexec-apps-{os.getuid()}")
    os.makedirs(root, exist_ok=True)
    return root


def cached(root, key, build):
    """The folder `root/key`, made once by build(tmpdir): built in a private
    folder and renamed into place, so drivers started at once never see half
    an input."""
    final = os.path.join(root, key)
    if os.path.isdir(final):
        return final
    tmp = tempfile.mkdtemp(prefix=key + ".tmp.", dir=root)
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:  # another driver finished first
            if not os.path.isdir(final):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def run(name, argv, cwd=None, env=None):
    """Runs argv; on failure prints its output's tail and exits."""
    p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.splitlines()[-25:])
        fail(name, f"`{' '.join(argv)}` exited with {p.returncode}:\n{tail}")
    return p.stdout


def sha16(*paths):
    h = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def rounded(value, digits):
    """`value` with `digits` significant digits, as text (the tolerance of a
    result that is not bit-reproducible)."""
    return f"{value:.{digits - 1}e}"


def report(steady, result, **extra):
    for k, v in extra.items():
        print(f"{k} {v}")
    print(f"steady_seconds {steady:.6f}")
    print(f"result {result}")
    sys.stdout.flush()
