"""The SGD estimators' ``shuffle`` and scikit-learn's weighted SGD objective.

``shuffle=False`` visits the rows in their order, so that with ``batch_size=1`` a fit takes
scikit-learn's steps one for one.  With sample or class weights the SGD estimators minimise
scikit-learn's ``sum(w * loss) / n_samples + alpha * R(coef)`` (not the weighted mean
loss): checked against its exact minimiser, with ``batch_size`` covering all rows so that
each epoch is one full gradient step (whatever the order of the rows) and the fit
converges to round-off.
"""

import dask.array as da
import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from sklearn import linear_model as sk

from daskglm import SGDClassifier, SGDRegressor
from daskglm.compute.sampling import epoch_counts, epoch_order

N, D = 150, 4


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) * [1.0, 0.5, 2.0, 1.0] + [0.0, 1.0, 0.0, -1.0]
    y = X @ [1.0, -2.0, 0.5, 0.0] + 0.3 + rng.normal(size=N)
    weight = rng.uniform(0.2, 3.0, size=N)  # mean about 1.6: the two objectives differ
    return X, y, weight


def _as(container, *arrays):
    if container == "numpy":
        return arrays
    if container == "pandas":
        return tuple(pd.DataFrame(a) if a.ndim == 2 else pd.Series(a) for a in arrays)
    return tuple(da.from_array(a, chunks=(40,) + a.shape[1:]) for a in arrays)


# shuffle ----------------------------------------------------------------------------------
def test_unshuffled_epoch_takes_the_rows_in_order():
    counts = epoch_counts([5, 3, 4], 4, seed=1, epoch=8, shuffle=False)
    np.testing.assert_array_equal(counts, [[4, 0, 0], [1, 3, 0], [0, 0, 4]])
    np.testing.assert_array_equal(epoch_order(7, 1, 8, 2, shuffle=False), np.arange(7))
    # the default shuffles: the same call without shuffle=False is not the identity
    assert not np.array_equal(epoch_order(50, 1, 8, 2), np.arange(50))
    assert not np.array_equal(epoch_counts([50, 50], 10, seed=1, epoch=8)[0], [10, 0])


CASES = [
    (SGDRegressor, sk.SGDRegressor, dict(penalty="l2", learning_rate="constant", eta0=0.01)),
    (SGDRegressor, sk.SGDRegressor, dict(loss="huber", penalty="l2",
                                         learning_rate="invscaling", eta0=0.05)),
    (SGDClassifier, sk.SGDClassifier, dict(loss="log_loss", learning_rate="invscaling",
                                           eta0=0.1)),
    (SGDClassifier, sk.SGDClassifier, dict(loss="hinge", learning_rate="optimal")),
]


@pytest.mark.parametrize("container", ["numpy", "pandas", "dask"])
@pytest.mark.parametrize("ours, theirs, options", CASES)
def test_unshuffled_fit_takes_scikit_learns_steps(container, ours, theirs, options):
    X, y, _ = _data()
    if ours is SGDClassifier:
        y = (y > 0).astype(int)
    common = dict(alpha=0.01, max_iter=4, tol=None, shuffle=False, **options)
    expected = theirs(**common).fit(X, y)
    fitted = ours(batch_size=1, **common).fit(*_as(container, X, y))
    # the same steps in the same order: equal up to round-off
    np.testing.assert_allclose(fitted.coef_, expected.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fitted.intercept_, expected.intercept_, rtol=1e-12, atol=1e-14)


def test_shuffled_fit_differs_from_unshuffled():
    X, y, _ = _data()
    common = dict(batch_size=1, max_iter=2, tol=None, random_state=0)
    shuffled = SGDRegressor(**common).fit(X, y)
    assert not np.allclose(shuffled.coef_, SGDRegressor(shuffle=False, **common).fit(X, y).coef_)
    np.testing.assert_array_equal(shuffled.coef_, SGDRegressor(shuffle=True, **common).fit(X, y).coef_)


def test_bad_shuffle_is_refused_before_any_work():
    X, y, _ = _data()
    with pytest.raises(ValueError, match="shuffle must be True or False"):
        SGDRegressor(shuffle="no").fit(X, y)
    with pytest.raises(ValueError, match="shuffle=False are options of solver='sgd'"):
        SGDRegressor(shuffle=False, solver="gossip").fit(X, y)


def test_n_jobs_is_accepted_and_changes_nothing():
    X, y, _ = _data()
    labels = (y > 0).astype(int)
    assert SGDClassifier(n_jobs=3).get_params()["n_jobs"] == 3
    common = dict(random_state=0, max_iter=3, tol=None)
    np.testing.assert_array_equal(SGDClassifier(n_jobs=3, **common).fit(X, labels).coef_,
                                  SGDClassifier(**common).fit(X, labels).coef_)


# scikit-learn's weighted objective ------------------------------------------------------
def _squared_optimum(X, y, weight, alpha):
    """The exact minimiser of ``sum(w (y - X b - c)^2 / 2) / n + alpha / 2 ||b||^2``."""
    design = np.column_stack([X, np.ones(len(y))])
    penalty = alpha * len(y) * np.diag([1.0] * X.shape[1] + [0.0])
    return np.linalg.solve(design.T @ (weight[:, None] * design) + penalty,
                           design.T @ (weight * y))


@pytest.mark.parametrize("container", ["numpy", "pandas", "dask"])
def test_weighted_regression_minimises_scikit_learns_objective(container):
    X, y, weight = _data()
    alpha = 0.05
    model = SGDRegressor(alpha=alpha, batch_size=N, learning_rate="constant", eta0=0.2,
                         max_iter=1500, tol=None)
    model.fit(*_as(container, X, y), sample_weight=_as(container, weight)[0])
    expected = _squared_optimum(X, y, weight, alpha)
    np.testing.assert_allclose(model.coef_, expected[:D], rtol=1e-9)
    np.testing.assert_allclose(model.intercept_, expected[D:], rtol=1e-9)
    # the weighted-mean objective (alpha scaled by sum(w) / n) has another minimiser
    other = _squared_optimum(X, y, weight, alpha * weight.sum() / N)
    assert np.abs(other[:D] - expected[:D]).max() > 1e-2
    # history_ reports scikit-learn's objective: at the optimum, its value there
    residual = y - X @ expected[:D] - expected[D]
    objective = (weight * residual**2 / 2).sum() / N + alpha / 2 * expected[:D] @ expected[:D]
    np.testing.assert_allclose(model.history_[-1]["objective"], objective, rtol=1e-9)


def _logistic_objective(X, s, weight, alpha):
    def objective(params):
        margin = s * (X @ params[:-1] + params[-1])
        coef = params[:-1]
        return (weight * np.logaddexp(0.0, -margin)).sum() / len(s) + alpha / 2 * coef @ coef

    def gradient(params):
        margin = s * (X @ params[:-1] + params[-1])
        r = -weight * s / (1.0 + np.exp(margin)) / len(s)
        return np.append(X.T @ r + alpha * params[:-1], r.sum())

    return objective, gradient


@pytest.mark.parametrize("container", ["numpy", "dask"])
def test_class_and_sample_weights_minimise_scikit_learns_objective(container):
    X, y, weight = _data(1)
    labels = np.where(y > 0.5, "yes", "no")
    class_weight = {"yes": 0.2, "no": 1.5}
    alpha = 0.02
    model = SGDClassifier(loss="log_loss", alpha=alpha, class_weight=class_weight,
                          batch_size=N, learning_rate="constant", eta0=3.0, max_iter=3000,
                          tol=None)
    model.fit(*_as(container, X), labels, sample_weight=_as(container, weight)[0])
    # scikit-learn's: the class weight multiplies the sample weight, the sum over n rows
    rows = weight * np.where(labels == "yes", 0.2, 1.5)
    objective, gradient = _logistic_objective(X, np.where(labels == "yes", 1.0, -1.0), rows,
                                              alpha)
    found = minimize(objective, np.zeros(D + 1), jac=gradient, method="BFGS",
                     options={"gtol": 1e-13, "maxiter": 10000})
    np.testing.assert_allclose(model.coef_.ravel(), found.x[:D], rtol=1e-8)
    np.testing.assert_allclose(model.intercept_, found.x[D:], rtol=1e-8)
    np.testing.assert_allclose(model.history_[-1]["objective"], found.fun, rtol=1e-9)


def test_partial_fit_takes_each_chunks_weighted_objective():
    X, y, weight = _data()
    common = dict(alpha=0.05, batch_size=N, learning_rate="constant", eta0=0.2, random_state=0)
    streamed = SGDRegressor(**common)
    for _ in range(3):
        streamed.partial_fit(X, y, sample_weight=weight)
    fitted = SGDRegressor(max_iter=3, tol=None, **common).fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(streamed.coef_, fitted.coef_)
    np.testing.assert_array_equal(streamed.intercept_, fitted.intercept_)
    assert [entry["objective"] for entry in streamed.history_] == \
        [entry["objective"] for entry in fitted.history_]


# on a cluster -----------------------------------------------------------------------------
def test_on_a_cluster_the_fits_do_not_depend_on_the_partitions(client):
    X, y, weight = _data()
    # unshuffled: the steps read rows 0-19, 20-39, ... across the partitions' boundaries
    common = dict(batch_size=20, shuffle=False, sync_every=None, max_iter=3, tol=None,
                  learning_rate="constant", eta0=0.02)
    in_memory = SGDRegressor(**common).fit(X, y)
    on_cluster = SGDRegressor(**common).fit(*_as("dask", X, y))
    np.testing.assert_allclose(on_cluster.coef_, in_memory.coef_, rtol=1e-12)
    np.testing.assert_allclose(on_cluster.intercept_, in_memory.intercept_, rtol=1e-12)
    # weighted, one full step per epoch: scikit-learn's objective on every partition
    common = dict(alpha=0.05, batch_size=N, learning_rate="constant", eta0=0.2, max_iter=50,
                  tol=None, random_state=0)
    in_memory = SGDRegressor(**common).fit(X, y, sample_weight=weight)
    on_cluster = SGDRegressor(**common).fit(*_as("dask", X, y),
                                            sample_weight=_as("dask", weight)[0])
    np.testing.assert_allclose(on_cluster.coef_, in_memory.coef_, rtol=1e-10)
    np.testing.assert_allclose(on_cluster.history_[-1]["objective"],
                               in_memory.history_[-1]["objective"], rtol=1e-10)
