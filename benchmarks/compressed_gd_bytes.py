"""Measured bytes of gd and compressed gd on hashed rows, two-process LocalCluster:
``python -m benchmarks.compressed_gd_bytes [none topk qsgd sign stochastic]``."""
import sys
import warnings

import dask.array as da
import numpy as np
import scipy.sparse as sp
from distributed import Client, LocalCluster

import daskglm


def main():
    N, D, NNZ = 20_000, 2**14, 10
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(N), NNZ)
    X = sp.csr_matrix((np.ones(N * NNZ), (rows, rng.integers(0, D, N * NNZ))), shape=(N, D))
    coef = rng.normal(scale=0.7, size=D)
    y = (rng.uniform(size=N) < 1 / (1 + np.exp(-(X @ coef)))).astype(float)
    Xd = da.from_array(X, chunks=(N // 4, D), asarray=False)
    yd = da.from_array(y, chunks=N // 4)
    methods = sys.argv[1:] or ["none", "topk", "qsgd", "sign", "stochastic"]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        for name in methods:
            opts = None if name == "none" else {"compression": name}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = daskglm.LogisticRegression(C=1.0, solver="gd", solver_options=opts).fit(Xd, yd)
            eta = X @ m.coef_.ravel() + m.intercept_[0]
            obj = float(np.mean(np.logaddexp(0, eta) - y * eta) + m.coef_.ravel() @ m.coef_.ravel() / (2 * N))
            c = m.comm_
            print(f"{name:10s} conv={m.converged_} iter={m.n_iter_} rounds={c.rounds} "
                  f"measured={c.bytes_measured/1e6:.1f}MB objective={obj:.8f}", flush=True)

if __name__ == "__main__":
    main()
