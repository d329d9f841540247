"""A scikit-learn estimator whose loops are OpenMP (KMeans, Lloyd), next to
NumPy's BLAS in the same process; prints the fit's inertia and centres."""
import numpy as np
from sklearn.cluster import KMeans

from py_common import report_runtimes

rng = np.random.default_rng(3)
x = np.concatenate([rng.normal(loc=c, scale=0.5, size=(4000, 8)) for c in (0.0, 4.0, 8.0)])
gram = x.T @ x  # BLAS in the same process
km = KMeans(n_clusters=3, n_init=1, random_state=0, algorithm="lloyd").fit(x)
print(f"result: {km.inertia_:.9e} {np.sort(km.cluster_centers_[:, 0]).sum():.9e} {gram.trace():.9e}")
report_runtimes()
