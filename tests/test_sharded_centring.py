"""Sharded L-BFGS on uncentred columns: it iterates as on centred ones, as the
whole-vector L-BFGS does.

Click-through-like rows (dense numeric columns with means 1 to 5 and small spread, and
one-hot categorical fields, each of which sums to the intercept's column) make the
iteration in scaled but uncentred units crawl (2 to 4 times the whole-vector fit's
iterations here, 100 unconverged against 22 on the click-through benchmark).

Tolerances: fitted to ``tol=1e-8``, the sharded fit takes at most 1.5 times the
whole-vector fit's iterations and its coefficients and intercept agree with it and with
scikit-learn's (``tol=1e-12``) to ``1e-5`` relative to the largest parameter
(``rtol=1e-5`` with ``atol=1e-5 * max |params|``); against :func:`plain_lbfgs` (the
same centred iteration on numpy vectors) to ``1e-8`` after the same iterations, as in
``tests/test_sharded_lbfgs.py``.
"""

import contextlib

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression as SkLogistic

import daskglm
from daskglm.compute.column_shards import ColumnShard
from daskglm.model.penalties import L2
from daskglm.optim.vector_free_lbfgs import plain_lbfgs
from daskglm.solvers.base import Objective
from tests.test_sharded_lbfgs import (
    SHARDED,
    TIGHT,
    C,
    chunked,
    coordinates,
    criterion_scales,
    fit_killing_a_worker,
    objective,
    params_of,
)

TOL = {"tol": 1e-8, "max_iter": 1000}
#: Most iterations of the sharded fit, over the whole-vector fit's.
ITERATIONS_RATIO = 1.5
BLOCKS = {**SHARDED, "column_blocks": True}


def click_like(n=3000, levels=(3, 5, 8, 13, 21, 34), seed=0):
    """CSR rows of 4 numeric columns (``log1p`` of exponential counts: means 1 to 5) and
    one-hot fields of ``levels`` skewed levels; binary targets."""
    rng = np.random.default_rng(seed)
    numeric = np.log1p(rng.exponential(np.geomspace(3, 300, 4), size=(n, 4)))
    eta = -1.0 + (numeric - numeric.mean(axis=0)) @ np.linspace(-0.3, 0.3, 4)
    blocks = [sp.csr_matrix(numeric)]
    for k in levels:
        level = np.floor(k * rng.random(n) ** 2).astype(int)
        eta = eta + rng.normal(scale=0.5, size=k)[level]
        blocks.append(sp.csr_matrix((np.ones(n), level, np.arange(n + 1)), shape=(n, k)))
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return sp.hstack(blocks, format="csr"), y


@contextlib.contextmanager
def standardised_only(monkeypatch):
    """The whole-vector fit in the sharded fit's centred and scaled coordinates: it would
    also decorrelate these 88 columns (Whitened) and take 17 iterations where the
    sharded fit takes 61 (logistic; Poisson 10 against 82)."""
    with monkeypatch.context() as patched:
        patched.setattr(Objective, "column_covariance", lambda self: None)
        yield


def iterations(model):
    return int(np.ravel(model.n_iter_)[0])


def assert_same_fit(params, expected):
    scale = float(np.max(np.abs(expected)))
    np.testing.assert_allclose(params, expected, rtol=1e-5, atol=1e-5 * scale)


@pytest.mark.parametrize("where, options", [("cluster", SHARDED), ("process", SHARDED),
                                             ("process", BLOCKS)],
                         ids=["sharded-cluster", "sharded", "column_blocks"])
def test_uncentred_columns_converge_as_the_whole_vector_fit(request, monkeypatch, where,
                                                           options):
    X, y = click_like()
    data = chunked(X, y) if where == "cluster" else (X, y)
    if where == "cluster":
        request.getfixturevalue("client")
    with standardised_only(monkeypatch):
        whole = daskglm.LogisticRegression(solver="lbfgs", **TOL).fit(*data)
    sharded = daskglm.LogisticRegression(solver="lbfgs", solver_options=options,
                                         **TOL).fit(*data)
    assert whole.converged_ and sharded.converged_
    assert iterations(sharded) <= ITERATIONS_RATIO * iterations(whole)
    assert_same_fit(params_of(sharded), params_of(whole))
    sk_fit = SkLogistic(tol=1e-12, max_iter=100_000).fit(X, y)
    assert_same_fit(params_of(sharded), params_of(sk_fit))


def test_uncentred_columns_same_iterates_as_the_centred_reference():
    X, y = click_like(n=1500)
    alpha = 1.0 / (C * X.shape[0])
    model = daskglm.LogisticRegression(C=C, solver="lbfgs", solver_options=SHARDED,
                                       **TIGHT).fit(X, y)
    reference, outcome = plain_lbfgs(objective(X, y, alpha), np.zeros(X.shape[1] + 1),
                                     criterion_scales=criterion_scales(X),
                                     **coordinates(X, alpha), **TIGHT)
    assert model.converged_ and outcome.converged
    assert model.n_iter_ == outcome.n_iter
    np.testing.assert_allclose(params_of(model), reference, rtol=0, atol=1e-8)


def test_without_an_intercept_nothing_is_centred():
    X, y = click_like(n=1500)
    fits = [daskglm.LogisticRegression(solver="lbfgs", solver_options=o, fit_intercept=False,
                                       **TOL).fit(X, y) for o in (None, SHARDED)]
    assert all(f.converged_ for f in fits)
    assert_same_fit(params_of(fits[1]), params_of(fits[0]))
    assert np.all(fits[1].intercept_ == 0)


def test_units_are_the_centred_columns_sizes():
    from daskglm.model.families import Binomial
    from daskglm.solvers import Problem
    from daskglm.solvers.sharded_lbfgs import iteration_units

    means, mean_squares = np.array([1.0, 2.0, 0.0]), np.array([1.0, 5.0, 0.0])
    for fit_intercept in (True, False):
        problem = Problem(Binomial(), L2(0.0), fit_intercept, 3)
        start = np.zeros(problem.n_params)
        # not centred: the mean squares; centred: the variances, 0 for a constant column
        # (and a column of zeros): unit 1
        np.testing.assert_allclose(iteration_units(problem, mean_squares, start)[:3],
                                   [1.0, 1 / np.sqrt(5.0), 1.0])
        if fit_intercept:
            np.testing.assert_allclose(iteration_units(problem, mean_squares, start, means),
                                       [1.0, 1.0, 1.0, 1.0])
    # the penalty widens each: alpha / curvature (0.25 at zero for the logistic loss)
    problem = Problem(Binomial(), L2(0.5), True, 3)
    np.testing.assert_allclose(
        iteration_units(problem, mean_squares, np.zeros(4), means)[:3],
        1 / np.sqrt(np.array([0.0, 1.0, 0.0]) + 2.0))


@pytest.mark.parametrize("options", [SHARDED, BLOCKS], ids=["sharded", "column_blocks"])
def test_poisson_on_uncentred_columns(monkeypatch, options):
    X, _ = click_like(n=2000)
    rng = np.random.default_rng(5)
    mu = np.exp(0.2 + 0.1 * (X[:, :4].toarray() - 2.5) @ np.ones(4))
    y = rng.poisson(mu).astype(float)
    with standardised_only(monkeypatch):
        fits = [daskglm.PoissonRegressor(alpha=1e-3, solver="lbfgs", solver_options=o,
                                         **TOL).fit(X, y) for o in (None, options)]
    assert all(f.converged_ for f in fits)
    assert iterations(fits[1]) <= ITERATIONS_RATIO * iterations(fits[0])
    assert_same_fit(params_of(fits[1]), params_of(fits[0]))


def test_a_shard_hands_out_the_point_it_moves_to():
    """The parameters pulled at ``x + alpha d`` are those :meth:`ColumnShard.values`
    gives after the move (what a rebuild after a lost worker restarts from), the
    intercept shifted by ``m . alpha d``."""
    means, units = np.array([2.0, 3.0]), np.array([0.5, 0.25, 1.0])
    shard = ColumnShard(0, 3, 2, L2(0.0), memory=2, units=units, means=means)
    shard.register_range([0])
    start = np.array([0.1, -0.2, 0.3])
    shard.load(start)
    np.testing.assert_array_equal(shard.values(), start)
    shard.push(0, 1, np.array([1.0, 2.0, 0.5]))
    penalty, slope, largest, intercept_grad = shard.finish(1, 0.0, 1.0)
    assert intercept_grad == 0.5
    shard.accept(0.0, None, 0, intercept_grad)
    m = means * units[:2]
    np.testing.assert_allclose(shard.g, [0.5 * (1.0 - 2.0 * 0.5), 0.25 * (2.0 - 3.0 * 0.5), 0.5])
    shard.direction(0, np.zeros(0), -1.0, float(m @ -shard.g[:2]))
    d = -shard.g
    pulled = shard.pull(0, 0.7)
    expected = start + 0.7 * units * d
    expected[-1] = start[-1] + 0.7 * (d[-1] - m @ d[:2])
    np.testing.assert_allclose(pulled, expected, rtol=1e-15)
    shard.push(0, 2, np.zeros(3))
    shard.finish(2, 0.7, 1.0)
    shard.accept(0.7, 0, 1, 0.0)
    np.testing.assert_allclose(shard.values(), pulled, rtol=1e-15)


def test_a_worker_lost_on_uncentred_columns_is_survived(own_client):
    """A rebuild after a lost worker restarts the centred iteration from the iterate the
    shards held (the intercept as the shards had shifted it)."""
    X, y = click_like(n=4000)
    model, caught, victim = fit_killing_a_worker(own_client, *chunked(X, y), SHARDED)
    assert model.converged_
    assert any("rebuilt" in w and victim in w for w in caught), (victim, caught)
    alpha = 1.0 / (C * X.shape[0])
    reference, _ = plain_lbfgs(objective(X, y, alpha), np.zeros(X.shape[1] + 1),
                               criterion_scales=criterion_scales(X), **coordinates(X, alpha),
                               **TIGHT)
    np.testing.assert_allclose(params_of(model), reference, rtol=0, atol=1e-6)
