"""Local SGD with a straggler deadline: each round averages the partitions that arrived
in time, weighted by their sample weight."""

import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression as SklearnLogisticRegression

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.testing import slow_worker


def _data(n=4000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ np.linspace(-1, 1, d)))).astype(float)
    return X, y, da.from_array(X, chunks=(n // 4, -1)), da.from_array(y, chunks=n // 4)


def _fit(X, y, **options):
    model = daskglm.LogisticRegression(
        solver="sgd", C=10.0, max_iter=6, tol=None,
        solver_options={"batch_size": 40, "sync_every": 5, "random_state": 0,
                        "learning_rate": "constant", "eta0": 0.1, **options})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


def test_when_every_partition_arrives_it_is_local_sgd(client):
    """``min_fraction=1`` waits for every partition: the same iterates as local SGD (the
    sums of the deadline round's fixed-order tree against the plain round's, to 1e-12)."""
    _, _, X, y = _data()
    plain = _fit(X, y)
    waiting = _fit(X, y, min_fraction=1.0)
    assert waiting.comm_.count(Kind.DEADLINE_LOCAL_SGD) > 0
    assert all(entry["dropped"] == [()] * len(entry["dropped"]) for entry in waiting.history_)
    np.testing.assert_allclose(waiting.coef_, plain.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(waiting.intercept_, plain.intercept_, rtol=1e-12, atol=1e-14)


def test_a_straggler_is_dropped_and_the_fit_still_reaches_the_optimum(client):
    """One of two worker processes slowed by 0.3 s a task, ``min_fraction=0.5``: the first
    rounds drop its partitions, later ones take their backups; the coefficients are those
    of scikit-learn's optimum to 0.05 (SGD with a constant rate of 0.1 after 6 epochs)."""
    X_np, y_np, X, y = _data()
    with slow_worker(client, sorted(client.nthreads())[1], 0.3):
        model = _fit(X, y, min_fraction=0.5, deadline=5.0)
    dropped = [d for entry in model.history_ for d in entry["dropped"]]
    assert any(dropped), "no round dropped the slow worker's partitions"
    reference = SklearnLogisticRegression(C=10.0, tol=1e-10).fit(X_np, y_np)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=0.05)


def test_hogwild_with_a_deadline_is_refused():
    _, _, X, y = _data(n=400)
    with pytest.raises(ValueError, match="not to hogwild"):
        daskglm.LogisticRegression(solver="sgd", solver_options={
            "deadline": 1.0, "hogwild": 2, "sync_every": 4}).fit(X, y)
