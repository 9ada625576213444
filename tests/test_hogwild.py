"""Hogwild SGD on one partition: exact against a numpy reference, close to scikit-learn.

With one thread a run is deterministic, so it is held to a plain numpy implementation of
the documented step to 1e-12.  With two threads the interleaving of the updates is not
reproducible, so multi-threaded runs are held to the optimum instead: the objective
``mean_i s_i L_i + alpha / 2 ||w||^2`` (computed here) must come within a relative gap
``GAP`` of scikit-learn's exact solution of the same problem.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit
from sklearn.linear_model import LogisticRegression, Ridge

from daskglm.compute import hogwild
from daskglm.compute.hogwild import hogwild_epochs

#: Relative objective gap to scikit-learn's optimum that ``EPOCHS`` epochs must reach on the
#: sparse problems below (they reach 1e-4 to 1e-3, with one thread or two).
GAP = 1e-2
EPOCHS = 40


def objective(X, y, sample_weight, coef, intercept, loss, alpha):
    """``mean_i s_i L(x_i . w + b, y_i) + alpha / 2 ||w||^2``, the objective minimised."""
    prediction = np.asarray(X @ coef).ravel() + intercept
    if loss == "log_loss":
        losses = np.logaddexp(0.0, prediction) - y * prediction
    else:
        losses = 0.5 * (prediction - y) ** 2
    return np.mean(sample_weight * losses) + 0.5 * alpha * coef @ coef


def reference_sgd(X, y, sample_weight, coef, intercept, *, loss, alpha, eta0, schedule,
                  power_t=0.25, epochs, seed, fit_intercept=True, step_offset=0):
    """The documented step in numpy, one row at a time (dense ``X``: every column stored)."""
    dense = not sp.issparse(X)
    X = sp.csr_matrix(X) if not dense else np.asarray(X, dtype=float)
    n, d = X.shape
    rows_per_column = np.full(d, n) if dense else np.bincount(X.indices, minlength=d)
    untouched = rows_per_column == 0
    share = np.zeros(d)
    share[~untouched] = alpha * n / rows_per_column[~untouched]
    coef = np.array(coef, dtype=float)
    rng = np.random.default_rng(seed)
    step = step_offset
    for _ in range(epochs):
        for row in rng.permutation(n):
            if dense:
                columns, values = np.arange(d), X[row]
            else:
                entries = slice(X.indptr[row], X.indptr[row + 1])
                columns, values = X.indices[entries], X.data[entries]
            prediction = intercept + values @ coef[columns]
            derivative = expit(prediction) - y[row] if loss == "log_loss" else prediction - y[row]
            if schedule == "constant":
                rate = eta0
            elif schedule == "invscaling":
                rate = eta0 / (step + 1.0) ** power_t
            else:
                rate = 1.0 / (alpha * (alpha**-0.75 + step))
            scaled_gradient = rate * sample_weight[row] * derivative
            coef[columns] = (coef[columns] - scaled_gradient * values) / (
                1.0 + rate * share[columns]
            )
            coef[untouched] /= 1.0 + rate * alpha
            if fit_intercept:
                intercept -= scaled_gradient
            step += 1
    return coef, intercept


def tiny_problem(loss, seed=0, n=40, d=7):
    """A small CSR problem with weights, a warm start, and one column no row stores."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.4, format="csr", random_state=seed, data_rvs=rng.standard_normal)
    X = sp.csr_matrix(X.toarray() * (np.arange(d) != 3))  # column 3 empty
    if loss == "log_loss":
        y = (rng.random(n) < 0.5).astype(float)
    else:
        y = rng.normal(size=n)
    return X, y, rng.uniform(0.5, 2.0, n), rng.normal(size=d), 0.3


@pytest.mark.parametrize(
    "loss, schedule, eta0, step_offset",
    [
        ("log_loss", "optimal", 0.01, 0),
        ("log_loss", "invscaling", 0.5, 17),
        ("log_loss", "constant", 0.2, 0),
        ("squared_error", "constant", 0.05, 0),
        ("squared_error", "invscaling", 0.1, 5),
    ],
)
def test_one_thread_matches_numpy_reference(loss, schedule, eta0, step_offset):
    X, y, weights, coef, intercept = tiny_problem(loss)
    options = dict(loss=loss, alpha=0.05, eta0=eta0, schedule=schedule, epochs=4, seed=3,
                   step_offset=step_offset)
    got_coef, got_intercept, n_updates = hogwild_epochs(X, y, weights, coef, intercept,
                                                        threads=1, **options)
    want_coef, want_intercept = reference_sgd(X, y, weights, coef, intercept, **options)
    np.testing.assert_allclose(got_coef, want_coef, rtol=0, atol=1e-12)
    assert got_intercept == pytest.approx(want_intercept, rel=0, abs=1e-12)
    assert n_updates == 4 * X.shape[0]
    assert 0 < abs(got_coef[3]) < abs(coef[3])  # the empty column only shrinks


def test_dense_rows_match_numpy_reference():
    X, y, weights, coef, intercept = tiny_problem("log_loss")
    X = np.asfortranarray(X.toarray())  # converted to C order inside
    options = dict(loss="log_loss", alpha=0.05, eta0=0.3, schedule="invscaling", epochs=3,
                   seed=1)
    got_coef, got_intercept, _ = hogwild_epochs(X, y, weights, coef, intercept, **options)
    want_coef, want_intercept = reference_sgd(X, y, weights, coef, intercept, **options)
    np.testing.assert_allclose(got_coef, want_coef, rtol=0, atol=1e-12)
    assert got_intercept == pytest.approx(want_intercept, rel=0, abs=1e-12)


def test_dense_equals_csr_storing_every_entry():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))  # no zeros: the CSR stores every column of every row
    y = rng.normal(size=30)
    options = dict(loss="squared_error", alpha=0.1, eta0=0.05, schedule="constant", epochs=2,
                   seed=0)
    dense = hogwild_epochs(X, y, **options)
    sparse = hogwild_epochs(sp.csr_matrix(X), y, **options)
    np.testing.assert_allclose(dense[0], sparse[0], rtol=0, atol=1e-13)
    assert dense[1:] == pytest.approx(sparse[1:], abs=1e-13)


def test_fit_intercept_false_keeps_the_intercept():
    X, y, weights, coef, _ = tiny_problem("log_loss")
    options = dict(loss="log_loss", alpha=0.05, eta0=0.2, schedule="constant", epochs=2,
                   seed=0, fit_intercept=False)
    got_coef, got_intercept, _ = hogwild_epochs(X, y, weights, coef, -0.7, **options)
    want_coef, _ = reference_sgd(X, y, weights, coef, -0.7, **options)
    assert got_intercept == -0.7
    np.testing.assert_allclose(got_coef, want_coef, rtol=0, atol=1e-12)


def test_one_thread_is_deterministic_given_the_seed():
    X, y, weights, coef, intercept = tiny_problem("log_loss")
    first = hogwild_epochs(X, y, weights, coef, intercept, epochs=3, seed=7)
    again = hogwild_epochs(X, y, weights, coef, intercept, epochs=3, seed=7)
    other = hogwild_epochs(X, y, weights, coef, intercept, epochs=3, seed=8)
    np.testing.assert_array_equal(first[0], again[0])
    assert first[1] == again[1]
    assert not np.array_equal(first[0], other[0])


def test_step_offset_and_a_shared_generator_continue_a_run():
    X, y, weights, coef, intercept = tiny_problem("squared_error")
    options = dict(loss="squared_error", alpha=0.05, eta0=0.1, schedule="invscaling")
    whole = hogwild_epochs(X, y, weights, coef, intercept, epochs=4, seed=5, **options)
    generator = np.random.default_rng(5)
    half_coef, half_intercept, n_updates = hogwild_epochs(X, y, weights, coef, intercept,
                                                          epochs=2, seed=generator, **options)
    rest = hogwild_epochs(X, y, weights, half_coef, half_intercept, epochs=2, seed=generator,
                          step_offset=n_updates, **options)
    np.testing.assert_array_equal(whole[0], rest[0])
    assert whole[1] == rest[1]


def test_threads_take_the_serial_step_numbers_in_turns(monkeypatch):
    """Each epoch's rows are split into contiguous slices whose step numbers interleave."""
    calls = []

    def record(*args, first_step, step_stride, **kwargs):
        calls.append((args[5].copy(), first_step, step_stride))

    monkeypatch.setattr(hogwild, "sgd_rows", record)
    X, y, *_ = tiny_problem("log_loss", n=23)
    hogwild_epochs(X, y, epochs=2, threads=3, seed=0, step_offset=100)
    assert len(calls) == 6
    for epoch in range(2):
        epoch_calls = calls[3 * epoch:3 * epoch + 3]
        rows = np.concatenate([order for order, _, _ in epoch_calls])
        steps = np.concatenate([first + stride * np.arange(order.size)
                                for order, first, stride in epoch_calls])
        np.testing.assert_array_equal(np.sort(rows), np.arange(23))
        np.testing.assert_array_equal(np.sort(steps), 100 + 23 * epoch + np.arange(23))


def test_more_threads_than_rows():
    X, y, *_ = tiny_problem("log_loss", n=5)
    coef, intercept, n_updates = hogwild_epochs(X, y, epochs=2, threads=8, seed=0)
    assert np.isfinite(coef).all() and np.isfinite(intercept) and n_updates == 10


def test_an_error_in_a_thread_is_raised(monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("kernel failed")

    monkeypatch.setattr(hogwild, "sgd_rows", fail)
    X, y, *_ = tiny_problem("log_loss")
    with pytest.raises(RuntimeError, match="kernel failed"):
        hogwild_epochs(X, y, threads=2, seed=0)


def test_log_loss_survives_huge_predictions():
    X = sp.csr_matrix(np.array([[1e3, 0.0], [0.0, -1e3]]))
    coef, intercept, _ = hogwild_epochs(X, np.array([0.0, 1.0]), None, np.array([5.0, 5.0]),
                                        loss="log_loss", schedule="constant", eta0=0.1,
                                        epochs=3, seed=0)
    assert np.isfinite(coef).all() and np.isfinite(intercept)


@pytest.mark.parametrize("threads", [1, 2])
def test_inputs_are_not_modified(threads):
    X, y, weights, coef, intercept = tiny_problem("log_loss")
    X.indices = X.indices.copy()  # own arrays, compared below
    saved = [array.copy() for array in (X.data, X.indices, X.indptr, y, weights, coef)]
    new_coef, _, _ = hogwild_epochs(X, y, weights, coef, intercept, epochs=2, threads=threads,
                                    seed=0)
    for array, copy in zip((X.data, X.indices, X.indptr, y, weights, coef), saved):
        np.testing.assert_array_equal(array, copy)
    assert not np.shares_memory(new_coef, coef)


def test_unsorted_duplicated_and_other_formats_are_converted_into_copies():
    X, y, weights, coef, intercept = tiny_problem("squared_error")
    options = dict(loss="squared_error", alpha=0.05, eta0=0.05, schedule="constant", epochs=2,
                   seed=0)
    want = hogwild_epochs(X, y, weights, coef, intercept, **options)
    # the same matrix with each row's entries reversed and its first entry split in two
    data, indices, indptr = [], [], [0]
    for row in range(X.shape[0]):
        row_data = X.data[X.indptr[row]:X.indptr[row + 1]][::-1].tolist()
        row_indices = X.indices[X.indptr[row]:X.indptr[row + 1]][::-1].tolist()
        if row_data:
            row_data = [row_data[0] / 2, row_data[0] / 2] + row_data[1:]
            row_indices = [row_indices[0]] + row_indices
        data += row_data
        indices += row_indices
        indptr.append(len(data))
    messy = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=X.shape)
    assert not messy.has_sorted_indices
    saved = messy.indices.copy()
    for candidate in (messy, X.tocsc(), X.tocoo(), sp.csr_array(X)):
        got = hogwild_epochs(candidate, y, weights, coef, intercept, **options)
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(messy.indices, saved)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(threads=0), "threads"),
        (dict(threads=1.0), "threads"),
        (dict(threads=True), "threads"),
        (dict(epochs=0), "epochs"),
        (dict(step_offset=-1), "step_offset"),
        (dict(loss="hinge"), "loss"),
        (dict(schedule="adagrad"), "schedule"),
        (dict(alpha=-1.0), "alpha"),
        (dict(alpha=float("nan")), "alpha"),
        (dict(schedule="optimal", alpha=0.0), "optimal"),
        (dict(schedule="constant", eta0=0.0), "eta0"),
        (dict(schedule="invscaling", power_t=float("inf")), "power_t"),
        (dict(fit_intercept="yes"), "fit_intercept"),
        (dict(intercept=float("nan")), "intercept"),
        (dict(X=np.ones(40)), "2-D"),
        (dict(X=[[1.0, 2.0]]), "scipy.sparse"),
        (dict(X=np.full((40, 7), "a")), "real numbers"),
        (dict(X=sp.csr_matrix(np.full((40, 7), np.nan))), "NaN"),
        (dict(X=sp.csr_matrix((0, 7))), "no rows"),
        (dict(y=np.zeros(39)), "y"),
        (dict(y=np.full(40, 2.0)), r"\{0, 1\}"),
        (dict(y=np.full(40, np.inf)), "y"),
        (dict(sample_weight=-np.ones(40)), "sample_weight"),
        (dict(sample_weight=np.ones(41)), "sample_weight"),
        (dict(coef=np.zeros(6)), "coef"),
        (dict(coef=np.full(7, np.nan)), "coef"),
    ],
)
def test_bad_inputs_raise(change, message):
    X, y, *_ = tiny_problem("log_loss")
    arguments = dict(X=X, y=y, sample_weight=None, coef=None, intercept=0.0, loss="log_loss",
                     schedule="constant", eta0=0.1, alpha=1e-3, threads=1, epochs=1, seed=0)
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        hogwild_epochs(**arguments)


@pytest.fixture(scope="module")
def sparse_problem():
    """n=20000 rows, d=1000 columns, ~10 standard normal non-zeros a row, a planted model."""
    n, d, per_row = 20_000, 1_000, 10
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(
        (rng.normal(size=n * per_row), rng.integers(0, d, n * per_row),
         np.arange(0, n * per_row + 1, per_row)),
        shape=(n, d),
    )
    X.sum_duplicates()
    prediction = X @ (0.5 * rng.normal(size=d)) + 0.3
    labels = (rng.random(n) < expit(prediction)).astype(float)
    targets = prediction + 0.5 * rng.normal(size=n)
    return X, labels, targets


ALPHA = 1e-4


@pytest.fixture(scope="module")
def logistic_optimum(sparse_problem):
    X, labels, _ = sparse_problem
    n = X.shape[0]
    model = LogisticRegression(C=1.0 / (n * ALPHA), tol=1e-10, max_iter=10_000).fit(X, labels)
    return objective(X, labels, 1.0, model.coef_.ravel(), model.intercept_[0], "log_loss",
                     ALPHA)


@pytest.fixture(scope="module")
def ridge_optimum(sparse_problem):
    X, _, targets = sparse_problem
    n = X.shape[0]
    model = Ridge(alpha=n * ALPHA, tol=1e-12).fit(X, targets)
    return objective(X, targets, 1.0, model.coef_, model.intercept_, "squared_error", ALPHA)


@pytest.mark.parametrize("threads", [1, 2])
def test_logistic_reaches_scikit_learn_optimum(sparse_problem, logistic_optimum, threads):
    X, labels, _ = sparse_problem
    coef, intercept, _ = hogwild_epochs(X, labels, loss="log_loss", alpha=ALPHA, eta0=0.2,
                                        schedule="invscaling", epochs=EPOCHS, threads=threads,
                                        seed=1)
    reached = objective(X, labels, 1.0, coef, intercept, "log_loss", ALPHA)
    assert (reached - logistic_optimum) / abs(logistic_optimum) < GAP


@pytest.mark.parametrize("threads", [1, 2])
def test_squared_error_reaches_ridge_optimum(sparse_problem, ridge_optimum, threads):
    X, _, targets = sparse_problem
    coef, intercept, _ = hogwild_epochs(X, targets, loss="squared_error", alpha=ALPHA,
                                        eta0=0.03, schedule="invscaling", epochs=EPOCHS,
                                        threads=threads, seed=1)
    reached = objective(X, targets, 1.0, coef, intercept, "squared_error", ALPHA)
    assert (reached - ridge_optimum) / abs(ridge_optimum) < GAP
