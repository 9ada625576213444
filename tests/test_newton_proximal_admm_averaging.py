"""Newton, proximal gradient, ADMM and one-shot averaging against scikit-learn and statsmodels.

Tolerances, all stated relative to the reference:

* coefficients: ``max|coef - ref| / max|ref| <= 1e-5`` with our solvers at ``tol=1e-10`` and
  the references run to round-off (``tol`` 1e-12 to 1e-14); the intercept to the same
  tolerance, relative to ``max(1, |ref|)``.  L1 solutions must also have exactly the
  reference's zeros;
* the same problem split into 1, 3 (uneven) and 8 partitions: coefficients within 1e-6
  of each other (1e-4 in objective for averaging, which is exact on one partition only);
* averaging with the Newton correction on 100,000 rows: objective within ``1e-4``
  (relative) of the optimum, in exactly 1 solver round (3 with the correction and its
  verification).
"""

import inspect
import warnings
from types import SimpleNamespace

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sparse
import statsmodels.api as sm
from sklearn import linear_model as sk
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_estimator

import daskglm
from daskglm.compute.coordinates import Standardised
from daskglm.compute.summaries import column_moments
from daskglm.engine import make_engine
from daskglm.model.families import Binomial, Gaussian, Poisson
from daskglm.model.penalties import L1, L2, ElasticNet, NoPenalty
from tests.conftest import make_data

RTOL = 1e-5
TIGHT = {"tol": 1e-10, "max_iter": 5000}


def rel_error(coef, reference):
    return np.max(np.abs(np.ravel(coef) - np.ravel(reference))) / np.max(np.abs(reference))


def check_same(model, reference, rtol=RTOL, same_zeros=False):
    assert model.converged_
    assert rel_error(model.coef_, reference.coef_) <= rtol
    ref_intercept = float(np.ravel(reference.intercept_)[0])
    intercept = float(np.ravel(model.intercept_)[0])
    assert abs(intercept - ref_intercept) <= rtol * max(1.0, abs(ref_intercept))
    if same_zeros:
        np.testing.assert_array_equal(np.ravel(model.coef_) == 0, np.ravel(reference.coef_) == 0)


def sk_logistic(C, l1_ratio, **kwargs):
    """scikit-learn's LogisticRegression with an L1 share ``l1_ratio``, in any version."""
    new_api = inspect.signature(sk.LogisticRegression).parameters["penalty"].default == "deprecated"
    if not new_api:
        kwargs["penalty"] = "l2" if l1_ratio == 0 else "elasticnet"
    return sk.LogisticRegression(C=C, l1_ratio=l1_ratio, **kwargs)


def fit_quietly(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(*args, **kwargs)


def mean_objective(family, penalty, X, y, w, coef, intercept):
    """Weighted mean loss plus penalty, computed directly on numpy arrays."""
    w = np.ones(len(y)) if w is None else w
    eta = X @ np.ravel(coef) + float(np.ravel(intercept)[0])
    return family.loss(y, eta, w) / w.sum() + penalty.value(np.ravel(coef))


def chunked(X, y, w, n_parts):
    """Dask arrays in ``n_parts`` row chunks (uneven for 3)."""
    n = X.shape[0]
    if n_parts == 3:
        sizes = (n // 5, n // 2, n - n // 5 - n // 2)
    else:
        sizes = tuple(len(part) for part in np.array_split(np.arange(n), n_parts))
    return (
        da.from_array(X, chunks=(sizes, -1)),
        da.from_array(y, chunks=sizes),
        None if w is None else da.from_array(w, chunks=sizes),
    )


# smooth problems: scikit-learn's own estimators at round-off ---------------------------
SMOOTH_CASES = {
    "ridge-weighted": (
        "gaussian", True,
        lambda solver: daskglm.Ridge(alpha=30.0, solver=solver, **TIGHT),
        lambda: sk.Ridge(alpha=30.0, solver="cholesky"),
    ),
    "logistic-l2-weighted": (
        "binomial", True,
        lambda solver: daskglm.LogisticRegression(C=0.5, solver=solver, **TIGHT),
        lambda: sk_logistic(0.5, 0.0, solver="newton-cholesky", tol=1e-12, max_iter=1000),
    ),
    "poisson-l2-weighted": (
        "poisson", True,
        lambda solver: daskglm.PoissonRegressor(alpha=0.1, solver=solver, **TIGHT),
        lambda: sk.PoissonRegressor(alpha=0.1, solver="newton-cholesky", tol=1e-12, max_iter=1000),
    ),
}


@pytest.mark.parametrize("case", list(SMOOTH_CASES))
@pytest.mark.parametrize("solver", ["newton", "proximal", "admm"])
def test_smooth_problems_match_sklearn(solver, case):
    family, weights, ours, reference = SMOOTH_CASES[case]
    X, y, w = make_data(family, weights=weights)
    model = ours(solver).fit(X, y, sample_weight=w)
    check_same(model, fit_quietly(reference(), X, y, sample_weight=w))
    assert model.solver_ == solver


@pytest.mark.parametrize("solver", ["newton", "proximal", "admm"])
def test_unpenalised_poisson_matches_statsmodels(solver):
    X, y, _ = make_data("poisson")
    model = daskglm.PoissonRegressor(alpha=0.0, solver=solver, **TIGHT).fit(X, y)
    result = sm.GLM(y, sm.add_constant(X), family=sm.families.Poisson()).fit(tol=1e-14)
    assert model.converged_
    assert rel_error(model.coef_, result.params[1:]) <= RTOL
    assert abs(model.intercept_ - result.params[0]) <= RTOL * max(1.0, abs(result.params[0]))


# L1 and elastic net: coordinate descent and saga at round-off ---------------------------
L1_CASES = {
    "lasso-weighted": (
        "gaussian",
        lambda solver: daskglm.Lasso(alpha=0.3, solver=solver, **TIGHT),
        lambda: sk.Lasso(alpha=0.3, tol=1e-14, max_iter=100_000),
    ),
    "elasticnet-weighted": (
        "gaussian",
        lambda solver: daskglm.ElasticNet(alpha=0.5, l1_ratio=0.5, solver=solver, **TIGHT),
        lambda: sk.ElasticNet(alpha=0.5, l1_ratio=0.5, tol=1e-14, max_iter=100_000),
    ),
    "logistic-l1-weighted": (
        "binomial",
        lambda solver: daskglm.LogisticRegression(penalty="l1", C=0.01, solver=solver, **TIGHT),
        lambda: sk_logistic(0.01, 1.0, solver="saga", tol=1e-14, max_iter=100_000),
    ),
    "logistic-elasticnet-weighted": (
        "binomial",
        lambda solver: daskglm.LogisticRegression(
            penalty="elasticnet", l1_ratio=0.5, C=0.005, solver=solver, **TIGHT
        ),
        lambda: sk_logistic(0.005, 0.5, solver="saga", tol=1e-14, max_iter=100_000),
    ),
}


@pytest.mark.parametrize("case", list(L1_CASES))
@pytest.mark.parametrize("solver", ["proximal", "admm"])
def test_l1_problems_match_sklearn(solver, case):
    family, ours, reference = L1_CASES[case]
    X, y, w = make_data(family, weights=True)
    ref = fit_quietly(reference(), X, y, sample_weight=w)
    assert np.any(np.ravel(ref.coef_) == 0), "the case should have exact zeros"
    model = ours(solver).fit(X, y, sample_weight=w)
    check_same(model, ref, same_zeros=True)


def test_auto_uses_proximal_for_the_lasso():
    X, y, _ = make_data("gaussian")
    assert daskglm.Lasso(alpha=0.1).fit(X, y).solver_ == "proximal"


def test_auto_weighs_proximal_newton_against_proximal_gradient_for_l1_glms():
    """Few features: proximal Newton's Hessian rounds are cheap and few; hundreds: the
    proximal gradient's many cheap rounds cost less (the cost model's predictions)."""
    from daskglm.accounting.choice import choose_method
    from daskglm.model.families import Binomial, Poisson
    from daskglm.model.penalties import L1, ElasticNet, NonNegative
    from daskglm.model.problem import Problem

    X, y, _ = make_data("binomial")
    model = daskglm.LogisticRegression(penalty="l1", l1_ratio=1.0, C=0.5, tol=1e-8).fit(X, y)
    assert model.solver_ == "newton" and model.converged_
    reference = daskglm.LogisticRegression(penalty="l1", l1_ratio=1.0, C=0.5, tol=1e-8,
                                           solver="proximal").fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
    able = {"newton", "proximal"}
    for family in (Binomial(), Poisson()):
        for penalty in (L1(0.01), ElasticNet(0.01, 0.5)):
            narrow = Problem(family, penalty, True, 20)
            wide = Problem(family, penalty, True, 400)
            assert choose_method(narrow, 10**6, able, workers=2).method == "newton"
            assert choose_method(wide, 10**5, able, workers=2).method == "proximal"
    # no L1 weight, or a constraint Newton does not take: never Newton
    assert choose_method(Problem(Poisson(), L1(0.0), True, 20), 10**6, able,
                         workers=2).method == "proximal"
    assert choose_method(Problem(Poisson(), NonNegative(L1(0.01)), True, 20), 10**6, able,
                         workers=2).method == "proximal"


def test_auto_uses_normal_equations_without_l1():
    X, y, _ = make_data("gaussian")
    assert daskglm.Lasso(alpha=0.0).fit(X, y).solver_ == "normal"
    assert daskglm.ElasticNet(alpha=0.1, l1_ratio=0.0).fit(X, y).solver_ == "normal"


def test_lasso_on_sparse_input_and_without_intercept():
    X, y, _ = make_data("gaussian")
    X[np.abs(X) < 0.8] = 0.0
    ref = sk.Lasso(alpha=0.05, fit_intercept=False, tol=1e-14, max_iter=100_000).fit(X, y)
    model = daskglm.Lasso(alpha=0.05, fit_intercept=False, **TIGHT).fit(sparse.csr_matrix(X), y)
    check_same(model, ref, same_zeros=True)
    assert model.comm_.count("moments") == 0  # the column scales come with validation


# every method, the same answer on 1, 3 and 8 partitions ----------------------------------
PARTITION_CASES = {
    "newton": lambda: daskglm.LogisticRegression(C=0.5, solver="newton", **TIGHT),
    "proximal": lambda: daskglm.LogisticRegression(
        penalty="elasticnet", l1_ratio=0.5, C=0.05, solver="proximal", **TIGHT
    ),
    "admm": lambda: daskglm.LogisticRegression(
        penalty="elasticnet", l1_ratio=0.5, C=0.05, solver="admm", **TIGHT
    ),
    "averaging-newton": lambda: daskglm.LogisticRegression(
        C=0.5, solver="averaging", solver_options={"correction": "newton"}, **TIGHT
    ),
}


@pytest.mark.parametrize("method", list(PARTITION_CASES))
def test_same_answer_on_1_3_and_8_partitions(method):
    X, y, w = make_data("binomial", weights=True)
    models = {}
    for n_parts in (1, 3, 8):
        Xd, yd, wd = chunked(X, y, w, n_parts)
        model = PARTITION_CASES[method]().fit(Xd, yd, sample_weight=wd)
        validate = model.comm_.records[0]
        assert validate.kind == "validate"
        assert validate.tasks == n_parts  # at most 8 partials: the driver sums them
        models[n_parts] = model
    one = models[1]
    for n_parts in (3, 8):
        if method.startswith("averaging"):
            penalty = L2(1.0 / (0.5 * w.sum()))
            best = mean_objective(Binomial(), penalty, X, y, w, one.coef_, one.intercept_)
            got = mean_objective(Binomial(), penalty, X, y, w, models[n_parts].coef_,
                                 models[n_parts].intercept_)
            assert 0 <= (got - best) / abs(best) <= 1e-4
        else:
            assert rel_error(models[n_parts].coef_, one.coef_) <= 1e-6
            assert abs(models[n_parts].intercept_[0] - one.intercept_[0]) <= 1e-6


# averaging: exact rounds and accuracy on 100,000 rows ----------------------------------
@pytest.fixture(scope="module")
def large_binomial():
    rng = np.random.default_rng(7)
    n, d = 100_000, 4
    X = rng.normal(size=(n, d)) + rng.normal(size=d)
    eta = X @ rng.normal(scale=0.5, size=d) - 0.2
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float)
    w = rng.uniform(0.5, 1.5, size=n)
    return X, y, w


def solver_rounds(model):
    return [r.kind for r in model.comm_.records if r.kind != "validate"]


@pytest.mark.parametrize("correction", [None, "newton"], ids=["plain", "newton-correction"])
def test_averaging_rounds_and_gap_on_100k_rows(large_binomial, correction):
    X, y, w = large_binomial
    C = 1e-3
    ref = sk_logistic(C, 0.0, solver="newton-cholesky", tol=1e-12, max_iter=100).fit(
        X, y, sample_weight=w
    )
    Xd, yd, wd = chunked(X, y, w, 8)
    model = daskglm.LogisticRegression(
        C=C, solver="averaging", tol=1e-10, solver_options={"correction": correction}
    )
    # neither the average nor one Newton step from it reaches tol=1e-10, and they say so
    with pytest.warns(ConvergenceWarning, match="global optimality"):
        model.fit(Xd, yd, sample_weight=wd)

    assert model.comm_.count("validate") == 1
    if correction is None:
        assert solver_rounds(model) == ["local_solve"]
        assert model.n_iter_ == 1 and len(model.history_) == 1
    else:  # the Newton step, then one round verifying optimality at the corrected point
        assert solver_rounds(model) == ["local_solve", "hessian", "gradient"]
        assert model.n_iter_ == 2 and len(model.history_) == 2
        assert np.isfinite(model.history_[0]["objective"])
        assert model.history_[1]["grad_norm"] > 1e-10
    assert model.comm_.records[1].tasks == 8  # one local solve per partition
    assert not model.converged_
    spread = model.history_[0]
    assert 0 < spread["spread"] <= spread["max_spread"]

    penalty = L2(1.0 / (C * w.sum()))
    best = mean_objective(Binomial(), penalty, X, y, w, ref.coef_, ref.intercept_)
    got = mean_objective(Binomial(), penalty, X, y, w, model.coef_, model.intercept_)
    gap = (got - best) / abs(best)
    assert gap >= -1e-12
    if correction == "newton":
        assert gap <= 1e-4
        assert rel_error(model.coef_, ref.coef_) <= 1e-4


def test_averaging_on_one_partition_is_the_exact_solution():
    X, y, w = make_data("gaussian", weights=True)
    Xd, yd, wd = chunked(X, y, w, 1)
    model = daskglm.Lasso(alpha=0.1, solver="averaging", **TIGHT).fit(Xd, yd, sample_weight=wd)
    ref = sk.Lasso(alpha=0.1, tol=1e-14, max_iter=100_000).fit(X, y, sample_weight=w)
    check_same(model, ref, rtol=1e-6)
    assert model.history_[0]["spread"] <= 1e-12


def test_averaging_newton_correction_with_l1_is_a_proximal_newton_step():
    X, y, w = make_data("gaussian", weights=True)
    Xd, yd, wd = chunked(X, y, w, 8)
    model = daskglm.Lasso(
        alpha=0.1, solver="averaging", solver_options={"correction": "newton"}, **TIGHT
    ).fit(Xd, yd, sample_weight=wd)
    # the quadratic model of a Gaussian loss is exact: one step lands on the optimum
    ref = sk.Lasso(alpha=0.1, tol=1e-14, max_iter=100_000).fit(X, y, sample_weight=w)
    check_same(model, ref, same_zeros=True)


# newton and admm bookkeeping -----------------------------------------------------------
def test_newton_spends_one_round_per_full_step():
    X, y, w = make_data("binomial", weights=True)
    model = daskglm.LogisticRegression(C=0.5, solver="newton", **TIGHT).fit(X, y, sample_weight=w)
    assert solver_rounds(model)[0] == "validate_hessian"
    assert all(entry["step"] == 1.0 for entry in model.history_)
    # the first Hessian is computed in the validation round, and the last point, predicted
    # to meet tol, is evaluated without its Hessian (which nothing would use)
    n_iter = int(model.n_iter_[0])
    assert solver_rounds(model)[1:] == ["hessian"] * (n_iter - 1) + ["gradient"]
    assert n_iter <= 8


@pytest.mark.parametrize("solver_family", ["binomial", "poisson", "multinomial", "probit",
                                           "gamma-log", "tweedie-1.5", "negative_binomial",
                                           "tweedie-3"])
def test_newton_stops_at_the_same_point_without_the_last_hessian(monkeypatch, solver_family):
    from daskglm.solvers import newton

    if solver_family == "multinomial":
        rng = np.random.default_rng(0)
        X = rng.normal(size=(600, 4))
        y = np.argmax(X @ rng.normal(size=(4, 3)) + rng.gumbel(size=(600, 3)), axis=1)
        make = lambda: daskglm.LogisticRegression(C=2.0, solver="newton", **TIGHT)  # noqa: E731
    elif solver_family == "probit":
        X, y, _ = make_data("binomial")
        make = lambda: daskglm.GLM(family="binomial", link="probit", penalty="l2",  # noqa: E731
                                   alpha=0.01, solver="newton", **TIGHT)
    elif solver_family in ("gamma-log", "tweedie-1.5", "negative_binomial", "tweedie-3"):
        # log links that are not the natural one: Newton's Hessian is exact where the loss
        # is convex in eta at every target (all but Tweedie 3, which is Fisher scoring)
        from daskglm.model.families import Gamma, NegativeBinomial, Tweedie

        family = {"gamma-log": Gamma("log"), "tweedie-1.5": Tweedie(1.5),
                  "negative_binomial": NegativeBinomial(1.0),
                  "tweedie-3": Tweedie(3.0)}[solver_family]
        X, y, _ = make_data("poisson")
        y = y + 0.5 if family.name in ("gamma", "tweedie") else y  # > 0 for Gamma, Tweedie 3
        make = lambda: daskglm.GLM(family=family, penalty="l2", alpha=0.01,  # noqa: E731
                                   solver="newton", **TIGHT)
    else:
        X, y, _ = make_data(solver_family)
        estimator = (daskglm.LogisticRegression if solver_family == "binomial"
                     else daskglm.PoissonRegressor)
        kwargs = {"C": 0.5} if solver_family == "binomial" else {"alpha": 0.01}
        make = lambda: estimator(solver="newton", **kwargs, **TIGHT)  # noqa: E731
    predicted = make().fit(X, y)
    monkeypatch.setattr(newton, "_predicts_tol", lambda *args: False)
    every_hessian = make().fit(X, y)
    # the same iterates: the last point's value and gradient from a gradient round
    np.testing.assert_allclose(predicted.coef_, every_hessian.coef_, rtol=0, atol=1e-15)
    np.testing.assert_allclose(predicted.intercept_, every_hessian.intercept_, rtol=0,
                               atol=1e-15)
    # the last point's objective and optimality, from a gradient round instead
    last, reference = predicted.history_[-1], every_hessian.history_[-1]
    np.testing.assert_allclose(last["objective"], reference["objective"], rtol=1e-14)
    np.testing.assert_allclose(last["grad_norm"], reference["grad_norm"], rtol=1e-3,
                               atol=1e-16)
    assert np.array_equal(predicted.n_iter_, every_hessian.n_iter_) and predicted.converged_
    assert solver_rounds(every_hessian)[-1] == "hessian"
    # Fisher scoring (the expected curvature) converges linearly: no prediction
    fisher = solver_family in ("probit", "tweedie-3")
    last_kind = "hessian" if fisher else "gradient"
    assert solver_rounds(predicted)[-1] == last_kind
    assert len(solver_rounds(predicted)) == len(solver_rounds(every_hessian))


def test_newton_goes_on_when_the_predicted_last_step_falls_short(monkeypatch):
    from daskglm.solvers import newton

    X, y, w = make_data("binomial", weights=True)
    tight = {"tol": 1e-13, "max_iter": 100}  # six iterations: a miss, and a hit after it
    monkeypatch.setattr(newton, "_predicts_tol", lambda *args: False)
    reference = daskglm.LogisticRegression(C=0.5, solver="newton", **tight).fit(
        X, y, sample_weight=w)
    # a predictor that says yes whenever it is asked: all but the last prediction miss
    monkeypatch.setattr(newton, "_predicts_tol", lambda *args: True)
    model = daskglm.LogisticRegression(C=0.5, solver="newton", **tight).fit(
        X, y, sample_weight=w)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0, atol=1e-15)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=0, atol=1e-15)
    assert model.converged_ and np.array_equal(model.n_iter_, reference.n_iter_)
    rounds, every_hessian = solver_rounds(model), solver_rounds(reference)
    # each miss costs its gradient round, then the same point's Hessian round; the last
    # prediction's gradient round replaces the last Hessian round
    misses = rounds.count("gradient") - 1
    assert misses >= 1 and rounds[-1] == "gradient"
    assert all(rounds[i + 1] == "hessian" for i, kind in enumerate(rounds[:-1])
               if kind == "gradient")
    assert len(rounds) == len(every_hessian) + misses
    assert sum(entry["evaluations"] for entry in model.history_) == len(rounds) - 1
    # after a miss, two more full steps before the next prediction
    iterations = [entry["evaluations"] for entry in model.history_]
    for i, evaluations in enumerate(iterations):
        if evaluations == 2:  # a miss
            assert iterations[i + 1:i + 3] == [1, 1][:len(iterations[i + 1:i + 3])]


class _PseudoHuber:
    """``sum sqrt(1 + x^2)`` as a Newton objective, every evaluation logged; the Hessian
    of the evaluations in ``shrunk`` (by count) is scaled down so that its full step
    overshoots."""

    #: Its Hessian is exact: a full step that meets the test is taken as quadratic.
    loss = SimpleNamespace(exact_hessian=True)

    def __init__(self, shrunk):
        self.calls, self.shrunk, self.hessians = [], shrunk, {}

    def __call__(self, problem, engine):
        return self

    def _value_grad(self, x):
        return float(np.sum(np.sqrt(1 + x**2))), x / np.sqrt(1 + x**2)

    def value_and_grad(self, x):
        self.calls.append("gradient")
        return self._value_grad(x)

    def value_grad_hess(self, x):
        self.calls.append("hessian")
        value, grad = self._value_grad(x)
        hess = np.diag((1 + x**2) ** -1.5)
        if len(self.calls) in self.shrunk:
            hess = 0.2 * hess
        self.hessians[grad.tobytes()] = hess
        return value, grad, hess

    def optimality(self, x, grad):
        return float(np.max(np.abs(grad)))


@pytest.mark.parametrize("shrunk", [set(), {3}, {3, 4, 5}])
def test_newton_backtracks_from_a_rejected_predicted_step(monkeypatch, shrunk):

    from daskglm.solvers import newton

    objective = _PseudoHuber(shrunk)
    solve = newton.solve_symmetric

    def solve_with_the_current_hessian(hess, rhs):
        # the Hessian solved with is the one evaluated at the current point
        assert np.array_equal(objective.hessians[(-rhs).tobytes()], hess)
        return solve(hess, rhs)

    recorded = []
    monkeypatch.setattr(newton, "Objective", objective)
    monkeypatch.setattr(newton, "History", lambda engine: SimpleNamespace(
        entries=recorded, record=lambda value, optimality, step, **extra: recorded.append(
            (step, extra))))
    monkeypatch.setattr(newton, "solve_symmetric", solve_with_the_current_hessian)
    monkeypatch.setattr(newton, "_predicts_tol", lambda *args: True)
    problem = SimpleNamespace(penalty=SimpleNamespace(smooth=True))
    result = newton.Newton(tol=1e-12, max_iter=50).solve(problem, None, np.array([0.9, -0.5]))
    assert result.converged and result.message == "converged"
    assert np.max(np.abs(result.params)) <= 1e-12
    assert objective.calls[-1] == "gradient"
    # every evaluation is counted by the iteration that made it (the start: none)
    assert sum(extra["evaluations"] for _, extra in recorded) == len(objective.calls) - 1
    if shrunk:  # the predicted full step overshot: rejected, then a step of 1/2 or less
        assert any(step < 1.0 for step, _ in recorded)
def test_newton_solves_least_squares_in_one_step():
    X, y, w = make_data("gaussian", weights=True)
    model = daskglm.Ridge(alpha=3.0, solver="newton", **TIGHT).fit(X, y, sample_weight=w)
    assert model.n_iter_ == 1 and model.comm_.count("hessian") == 1
    assert model.comm_.count("validate_hessian") == 1
    check_same(model, sk.Ridge(alpha=3.0).fit(X, y, sample_weight=w), rtol=1e-10)


def test_admm_history_and_rounds():
    X, y, w = make_data("gaussian", weights=True)
    Xd, yd, wd = chunked(X, y, w, 3)
    model = daskglm.Lasso(alpha=0.1, solver="admm", **TIGHT).fit(Xd, yd, sample_weight=wd)
    assert model.comm_.count("moments") == 0  # from the validation round
    assert model.comm_.count("local_solve") == model.n_iter_ == len(model.history_)
    last = model.history_[-1]
    assert {"primal_residual", "dual_residual"} <= set(last)
    assert last["grad_norm"] <= 1e-6  # optimality of the consensus point, from the same round
    objectives = [entry["objective"] for entry in model.history_]
    assert objectives[-1] <= objectives[0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("family, fit_intercept, curvature", [
    ("binomial", False, 0.25),   # p (1 - p) at p = 1/2
    ("poisson", True, 1.0),      # exp(0)
    ("gaussian", True, 1.0),
])
def test_admm_auto_rho_is_a_fraction_of_the_starting_curvature(family, fit_intercept, curvature):
    from daskglm.solvers.admm import RHO_FACTOR, RHO_FACTOR_L1

    X, y, _ = make_data(family)
    Xd, yd = chunked(X, y, None, 4)[:2]
    model = {
        "binomial": daskglm.LogisticRegression(C=0.5, fit_intercept=fit_intercept),
        "poisson": daskglm.PoissonRegressor(alpha=0.1, fit_intercept=fit_intercept),
        "gaussian": daskglm.Ridge(alpha=1.0, fit_intercept=fit_intercept),
    }[family].set_params(solver="admm", max_iter=1)
    model.fit(Xd, yd)
    # history records rho on the per-partition scale, rho / N
    assert model.history_[0]["step"] * 4 == pytest.approx(RHO_FACTOR * curvature, rel=1e-12)
    explicit = clone(model).set_params(solver_options={"rho": 0.3})
    explicit.fit(Xd, yd)
    assert explicit.history_[0]["step"] * 4 == pytest.approx(0.3, rel=1e-12)
    if family == "gaussian":  # with an L1 part, a larger fraction
        lasso = daskglm.Lasso(alpha=0.1, fit_intercept=fit_intercept, solver="admm", max_iter=1)
        lasso.fit(Xd, yd)
        assert lasso.history_[0]["step"] * 4 == pytest.approx(RHO_FACTOR_L1 * curvature,
                                                              rel=1e-12)


# the distributed engine ----------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("solver", ["admm", "averaging"])
def test_map_rounds_on_a_two_process_cluster(client, solver):
    X, y, w = make_data("binomial", weights=True)
    data = chunked(X, y, w, 3)
    # a few ADMM iterations exercise map_each on the workers; both fits run the same
    # arithmetic, so they agree whether or not the method has converged
    model = daskglm.LogisticRegression(C=0.5, solver=solver, tol=1e-8, max_iter=6)
    on_cluster = clone(model).fit(*data[:2], sample_weight=data[2])
    assert on_cluster.comm_.count("local_solve") == (6 if solver == "admm" else 1)
    import daskglm.engine.build as engine_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine_module, "active_client", lambda: None)
        local = clone(model).fit(*data[:2], sample_weight=data[2])
    np.testing.assert_allclose(on_cluster.coef_, local.coef_, rtol=1e-7, atol=1e-12)


def test_map_each_sends_one_item_per_partition():
    X, y, w = make_data("gaussian", n=100)
    with make_engine(X, y, w, family=Gaussian(), client=None, n_partitions=4) as engine:
        sums = engine.map_each(lambda part, item, k: item * k + part[1].size, [0, 1, 2, 3], 10,
                               kind="test")
        assert sums == [25, 35, 45, 55]
        assert engine.ledger.records[-1].kind == "test"
        assert engine.ledger.records[-1].tasks == 4
        with pytest.raises(ValueError, match="one item per partition"):
            engine.map_each(lambda part, item: item, [1, 2], kind="test")


def test_column_moments_kernel():
    X, y, w = make_data("gaussian", n=50)
    stats = column_moments((X, y, w))
    np.testing.assert_allclose(stats.sums / stats.weight, X.mean(axis=0))
    weight = np.arange(50.0)
    stats = column_moments((sparse.csr_matrix(X), y, weight))
    np.testing.assert_allclose(stats.sums, weight @ X)
    np.testing.assert_allclose(stats.squares, weight @ X**2)
    assert stats.weight == weight.sum()


@pytest.mark.parametrize("fit_intercept", [True, False], ids=["intercept", "no-intercept"])
@pytest.mark.parametrize("penalty", [NoPenalty(), L2(0.3), L1(0.2), ElasticNet(0.4, 0.3)],
                         ids=lambda p: p.name)
def test_standardised_coordinates(penalty, fit_intercept):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3)) * [0.1, 1.0, 30.0] + [5.0, -2.0, 100.0]
    coordinates = Standardised.from_moments(X.mean(0), (X**2).mean(0), fit_intercept)
    n_params = 3 + int(fit_intercept)
    params = rng.normal(size=n_params)
    theta = coordinates.to_theta(params)
    np.testing.assert_allclose(coordinates.to_params(theta), params)
    # the model is unchanged and standardised: X coef + b == Z theta_coef + theta_0
    Z = (X - X.mean(0)) / X.std(0) if fit_intercept else X / np.sqrt((X**2).mean(0))
    b, theta_0 = (params[-1], theta[-1]) if fit_intercept else (0.0, 0.0)
    np.testing.assert_allclose(X @ params[:3] + b, Z @ theta[:3] + theta_0)
    # the chain rule: a linear function's gradient
    grad = rng.normal(size=n_params)
    np.testing.assert_allclose(coordinates.grad_to_theta(grad), coordinates.jacobian(n_params).T @ grad)
    # prox in theta minimises penalty(coef(theta')) + |theta' - theta|^2 / (2 step)
    step = 0.7
    best = coordinates.prox(penalty, theta, step)

    def value(v):
        return penalty.value(coordinates.to_params(v)[:3]) + np.sum((v - theta) ** 2) / (2 * step)

    for _ in range(200):
        assert value(best) <= value(best + 1e-3 * rng.normal(size=n_params)) + 1e-12


# proximal Newton: solver="newton" with an L1 or elastic-net penalty ----------------------
def _l1_logistic_data(n=4000, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 0] *= 10.0  # a column on another scale
    X[:, 1] += 3.0
    coef = np.r_[rng.normal(size=4), np.zeros(d - 4)]
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X @ (coef / np.r_[10.0, np.ones(d - 1)])
                                                  + 0.3)))).astype(float)
    return X, y


#: The L1 penalty of LogisticRegression before and after scikit-learn 1.8 (which takes it
#: from ``l1_ratio``); the warnings either version gives about the other are ignored.
L1_LOGISTIC = {"penalty": "l1", "l1_ratio": 1.0}


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_proximal_newton_fits_l1_logistic_as_scikit_learn_in_a_tenth_of_the_rounds():
    X, y = _l1_logistic_data()
    C = 0.02
    # scikit-learn's liblinear without an intercept (it would penalise one)
    reference = sk.LogisticRegression(C=C, solver="liblinear", tol=1e-12, max_iter=100_000,
                                      fit_intercept=False, **L1_LOGISTIC).fit(X, y)
    newton = daskglm.LogisticRegression(C=C, solver="newton", tol=1e-9, fit_intercept=False,
                                        **L1_LOGISTIC).fit(X, y)
    proximal = daskglm.LogisticRegression(C=C, solver="proximal", tol=1e-9, max_iter=5000,
                                          fit_intercept=False, **L1_LOGISTIC).fit(X, y)
    assert 0 < (newton.coef_ == 0).sum() < X.shape[1]  # an L1 fit: some coefficients zero
    assert newton.converged_ and proximal.converged_
    np.testing.assert_allclose(newton.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(newton.coef_, proximal.coef_, atol=1e-7)
    assert np.array_equal(newton.coef_ == 0, reference.coef_ == 0)  # the same support
    assert newton.comm_.rounds * 10 <= proximal.comm_.rounds


@pytest.mark.parametrize("penalty", [{"penalty": "l1"},
                                     {"penalty": "elasticnet", "l1_ratio": 0.5}])
def test_proximal_newton_fits_a_penalised_poisson_glm_as_the_proximal_solver(penalty):
    X, _, _ = make_data("gaussian", n=3000, d=10)
    rng = np.random.default_rng(1)
    y = rng.poisson(np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] - 0.5)).astype(float)
    fits = {solver: daskglm.GLM(family="poisson", alpha=0.01, solver=solver, tol=1e-10,
                                max_iter=5000, **penalty).fit(X, y)
            for solver in ("newton", "proximal")}
    assert all(fit.converged_ for fit in fits.values())
    assert (fits["newton"].coef_ == 0).any()  # the L1 part set some to zero
    np.testing.assert_allclose(fits["newton"].coef_, fits["proximal"].coef_, atol=1e-8)
    np.testing.assert_allclose(fits["newton"].intercept_, fits["proximal"].intercept_,
                               atol=1e-8)
    assert fits["newton"].n_iter_ <= 15
    assert fits["newton"].comm_.rounds * 5 <= fits["proximal"].comm_.rounds


def test_proximal_newton_lasso_equals_scikit_learn_and_does_not_depend_on_the_chunks():
    X, y, _ = make_data("gaussian", n=2000, d=10)
    reference = sk.Lasso(alpha=0.05, tol=1e-12, max_iter=100_000).fit(X, y)
    ours = daskglm.Lasso(alpha=0.05, solver="newton", tol=1e-10).fit(X, y)
    chunked = daskglm.Lasso(alpha=0.05, solver="newton", tol=1e-10).fit(
        da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300))
    np.testing.assert_allclose(ours.coef_, reference.coef_, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, atol=1e-8)
    np.testing.assert_allclose(chunked.coef_, ours.coef_, atol=1e-10)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_proximal_newton_says_when_it_stops_short():
    X, y = _l1_logistic_data()
    with pytest.warns(ConvergenceWarning):
        model = daskglm.LogisticRegression(C=0.02, solver="newton", tol=1e-12, max_iter=1,
                                           **L1_LOGISTIC).fit(X, y)
    assert not model.converged_ and model.n_iter_ == 1


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
def test_proximal_newton_fits_the_multinomial_model_with_l1_on_raw_scales():
    """Five classes, one with 0.1% of the rows, on raw-scale columns
    (``benchmarks.auto_cases.raw_scales``, 2e5 rows), L1 with ``C=0.01``: proximal
    Newton converges at its defaults (11 iterations here) to the optimum it reaches at
    ``tol=1e-8`` (probabilities within 1e-5), and ``auto`` takes it; proximal gradient
    stops at ``max_iter`` (it had 3,000 iterations and was still 7e-8 above in
    objective)."""
    from benchmarks.auto_cases import raw_scales

    X, y = raw_scales(200_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = daskglm.LogisticRegression(C=0.01, **L1_LOGISTIC).fit(X, y)
    assert model.solver_ == "newton" and model.converged_ and model.n_iter_[0] <= 30
    reference = daskglm.LogisticRegression(C=0.01, solver="newton", tol=1e-8,
                                           **L1_LOGISTIC).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X[:5000]), reference.predict_proba(X[:5000]),
                               atol=1e-5)
    assert np.array_equal(model.coef_ == 0, reference.coef_ == 0)


def test_auto_never_picks_proximal_newton():
    # the proximal solver stops on scikit-learn's duality gap for the lasso
    X, y, _ = make_data("gaussian", n=500, d=5)
    assert daskglm.Lasso(alpha=0.1).fit(X, y).solver_ == "proximal"


# clear errors --------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["lbfgs", "gd", "normal"])
def test_smooth_only_solvers_reject_l1(solver):
    X, y, _ = make_data("gaussian", n=50)
    with pytest.raises(ValueError, match=rf"solver '{solver}' does not handle.*non-smooth.*'proximal'"):
        daskglm.Lasso(alpha=0.1, solver=solver).fit(X, y)


@pytest.mark.parametrize(
    "solver, options, message",
    [
        ("averaging", {"correction": "exact"}, "must be None or 'newton'"),
        ("averaging", {"local_max_iter": 0}, "'local_max_iter' of solver 'averaging' must be an"),
        ("admm", {"rho": 0.0}, "'rho' of solver 'admm' must be a number > 0"),
        ("admm", {"rho": "large"}, "'rho' of solver 'admm' must be 'auto' or a number > 0"),
        ("admm", {"tau": 1.0}, "'tau' of solver 'admm' must be a number > 1"),
        ("proximal", {"step_size": -1.0}, "'step_size' of solver 'proximal' must be a number > 0"),
        ("proximal", {"momentum": True}, "Unknown option"),
        ("newton", {"max_line_search": 0.5}, "must be an integer >= 1"),
        ("newton", {"memory": 3}, "Unknown option"),
    ],
    ids=["averaging-correction", "averaging-local-max-iter", "admm-rho", "admm-rho-name",
         "admm-tau",
         "proximal-step-size", "proximal-unknown", "newton-line-search", "newton-unknown"],
)
def test_bad_solver_options(solver, options, message):
    X, y, _ = make_data("binomial", n=50)
    with pytest.raises(ValueError, match=message):
        daskglm.LogisticRegression(solver=solver, solver_options=options).fit(X, y)


@pytest.mark.parametrize(
    "model, message",
    [
        (daskglm.Lasso(alpha=-1.0), "strength must be a finite number >= 0"),
        (daskglm.ElasticNet(alpha=1.0, l1_ratio=1.5), "l1_ratio must be in"),
    ],
    ids=["lasso-negative-alpha", "elasticnet-bad-l1-ratio"],
)
def test_bad_penalty_parameters(model, message):
    X, y, _ = make_data("gaussian", n=50)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y)


# scikit-learn's estimator checks (the other estimators are checked in test_estimators) --
@pytest.mark.parametrize(
    "estimator", [daskglm.Lasso(alpha=0.1), daskglm.ElasticNet(alpha=0.1)],
    ids=["Lasso", "ElasticNet"],
)
def test_check_estimator_new_estimators(estimator):
    results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []


def test_poisson_family_is_exercised_by_every_method():
    # averaging's local solves and ADMM's run on every family, not only the ones above
    X, y, w = make_data("poisson", weights=True)
    ref = sk.PoissonRegressor(alpha=0.1, solver="newton-cholesky", tol=1e-12).fit(
        X, y, sample_weight=w
    )
    Xd, yd, wd = chunked(X, y, w, 3)
    model = daskglm.GLM(
        "poisson", "l2", alpha=0.1, solver="averaging", solver_options={"correction": "newton"},
        **TIGHT,
    ).fit(Xd, yd, sample_weight=wd)
    penalty = L2(0.1)
    best = mean_objective(Poisson(), penalty, X, y, w, ref.coef_, ref.intercept_)
    got = mean_objective(Poisson(), penalty, X, y, w, model.coef_, model.intercept_)
    assert 0 <= (got - best) / abs(best) <= 1e-4
