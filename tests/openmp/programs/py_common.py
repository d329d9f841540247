"""Shared by the Python application programs: which OpenMP runtimes and
BLAS the process has mapped, printed as `openmp: PATH...` and `blas: PATH`
lines (real paths: the maps name the files behind the links)."""


def mapped(*prefixes):
    """The mapped files whose base names start with one of `prefixes`."""
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            path = fields[5] if len(fields) >= 6 else ""
            if path.rsplit("/", 1)[-1].startswith(prefixes) and path not in found:
                found.append(path)
    return found


def report_runtimes():
    print("openmp:", " ".join(mapped("libgomp.so", "libomp.so", "libiomp5.so")) or "none")
    print("blas:", " ".join(mapped("libopenblas", "libblas.so")) or "none")
