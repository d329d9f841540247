"""Shared by the Python application programs: which OpenMP runtimes and
BLAS the process has mapped, printed as `openmp: PATH...` and `blas: PATH`
lines (real paths: the maps name the files behind the links), and whether
the threads the program starts are coexec threads."""
import ctypes
import threading


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


def report_hosted_threads(work, count=2):
    """Runs work() on `count` threads the program starts, and prints how many of them
    were coexec threads while they ran it (nosv_self() answers a task), as
    `hosted_threads: K of N`, or `none` when libcoexec is not loaded."""
    try:
        nosv_self = ctypes.CDLL(None).nosv_self
    except AttributeError:
        print("hosted_threads: none")
        return
    nosv_self.restype = ctypes.c_void_p
    hosted = []

    def body():
        work()
        hosted.append(bool(nosv_self()))

    threads = [threading.Thread(target=body) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"hosted_threads: {sum(hosted)} of {count}")
