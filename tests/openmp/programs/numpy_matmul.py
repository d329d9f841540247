"""NumPy matmuls on OpenBLAS's threads; prints a checksum of the results."""
import numpy as np

from py_common import report_hosted_threads, report_runtimes

rng = np.random.default_rng(7)
a = rng.random((600, 600))
b = rng.random((600, 600))
total = 0.0
for _ in range(8):
    c = a @ b
    total += float(c.sum())
    a = c / c.max()
print(f"result: {total:.12e}")
report_runtimes()
report_hosted_threads(lambda: a @ b)
