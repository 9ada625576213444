"""Every ``solver=`` value at its defaults on Dask data on a two-process cluster: it finishes
and reaches L-BFGS's accuracy within 0.01.

The default run fits 40,000 rows; ``-m slow`` fits 1e6 x 20 in 8 partitions, the scale at
which one synchronous round per SGD step used to take hours (``python -m benchmarks
defaults`` prints the times of the same fits).
"""

import warnings

import dask.array as da
import numpy as np
import pytest

import daskglm
from daskglm.solvers import SOLVERS

LOGISTIC = sorted(set(SOLVERS) - {"normal"}) + ["auto"]


def _data(rows, features=20, partitions=8, seed=0):
    chunk = -(-rows // partitions)
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, features), chunks=(chunk, features))
    eta = X @ np.linspace(-1.0, 1.0, features) + 0.5
    y = (eta + rng.logistic(size=rows, chunks=chunk) > 0).astype(float)
    y_linear = eta + rng.standard_normal(rows, chunks=chunk)
    return X.persist(), y.persist(), y_linear.persist()


def _check_every_solver(X, y, y_linear):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # averaging cannot verify its optimality
        reference = daskglm.LogisticRegression(solver="lbfgs").fit(X, y)
        expected = float(reference.score(X, y))
        for name in LOGISTIC:
            model = daskglm.LogisticRegression(solver=name).fit(X, y)
            assert abs(float(model.score(X, y)) - expected) <= 0.01, name
            if name in ("sgd", "gossip", "async"):  # sized from the cluster's round cost
                option = {"sgd": "sync_every", "gossip": "local_steps",
                          "async": "push_every"}[name]
                assert isinstance(model.comm_.choices[option][0], int), name
        linear = daskglm.LinearRegression(solver="lbfgs").fit(X, y_linear)
        normal = daskglm.LinearRegression(solver="normal").fit(X, y_linear)
    assert abs(float(normal.score(X, y_linear)) - float(linear.score(X, y_linear))) <= 0.01


def test_every_solver_finishes_at_its_defaults(client):
    _check_every_solver(*_data(40_000))


@pytest.mark.slow
def test_every_solver_finishes_at_its_defaults_on_a_million_rows(client):
    _check_every_solver(*_data(1_000_000))
