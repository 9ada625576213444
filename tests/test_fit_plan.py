"""The fit template of ``daskglm.estimators.base`` and its plan (``estimators/plan.py``):
each step's result is handed to the next as a value, nothing is left on the estimator
between steps, and the problem and solver are made once unless the data change them."""

import dataclasses
import warnings

import dask.array as da
import numpy as np
import pytest
from sklearn.base import clone

import daskglm
import daskglm.estimators.base as base_module
import daskglm.estimators.planning as planning_module
import daskglm.estimators.sgd as sgd_module
from daskglm.estimators.plan import FitData, FitPlan, LabelRequest
from tests.conftest import make_data

#: What a fitted estimator keeps that is neither a parameter nor a fitted attribute: the
#: dtype predictions are made in, SGD's state for ``partial_fit``, one-vs-rest's fits.
KEPT_AFTER_FIT = {"_fit_dtype", "_sgd_state", "_one_vs_rest"}

PENALISED = [
    (daskglm.LogisticRegression(C=0.5), True),
    (daskglm.Ridge(alpha=2.0), True),
    (daskglm.Lasso(alpha=0.1), False),
    (daskglm.ElasticNet(alpha=0.1), False),
    (daskglm.PoissonRegressor(alpha=0.1), False),
    (daskglm.GammaRegressor(alpha=0.1), False),
    (daskglm.TweedieRegressor(alpha=0.1), False),
    (daskglm.GLM("poisson", alpha=0.1), False),
    (daskglm.SGDRegressor(alpha=0.1), False),
    (daskglm.SGDClassifier(alpha=0.1), False),
]


def _name(case):
    return type(case[0]).__name__


@pytest.mark.parametrize("case", PENALISED, ids=_name)
def test_each_estimator_says_whether_its_penalty_scales_with_the_total_weight(case):
    """A plan whose problem does not change once the total weight is known is used as it
    is: the flag that says so must match the penalty the estimator makes."""
    estimator, scales = case
    assert estimator._penalty_scales_with_weight is scales
    assert (repr(estimator._penalty(1.0)) != repr(estimator._penalty(2.0))) is scales


def _counting_solvers(monkeypatch):
    made = []
    real = planning_module.get_solver

    def get_solver(name, problem, **kwargs):
        made.append(name)
        return real(name, problem, **kwargs)

    monkeypatch.setattr(planning_module, "get_solver", get_solver)
    return made


@pytest.mark.parametrize("estimator, made", [
    (daskglm.Lasso(alpha=0.01, solver="proximal"), 1),  # the plan's problem and solver
    (daskglm.PoissonRegressor(alpha=0.01, solver="lbfgs"), 1),
    (daskglm.LogisticRegression(solver="lbfgs"), 2),  # again with 1 / (C * total weight)
], ids=lambda value: type(value).__name__ if not isinstance(value, int) else str(value))
def test_the_solver_is_made_once_unless_the_data_change_the_problem(estimator, made,
                                                                    monkeypatch):
    family = {"Lasso": "gaussian", "PoissonRegressor": "poisson"}.get(
        type(estimator).__name__, "binomial")
    X, y, _ = make_data(family, n=600, d=4)
    solvers = _counting_solvers(monkeypatch)
    estimator.fit(X, y)
    assert len(solvers) == made


def test_a_classifier_whose_classes_the_engine_finds_plans_for_two_and_solves_for_three(
        monkeypatch):
    """The plan is made before the validation round finds the classes (two, as a first
    guess); the problem is made again, multinomial, once they are known."""
    X, y, _ = make_data("binomial", n=900, d=4)
    labels = (np.arange(900) % 3).astype(np.float64)
    plans = []
    real = base_module._GLMBase._plan

    def plan(self, data, init):
        made = real(self, data, init)
        plans.append((data, made))
        return made

    monkeypatch.setattr(base_module._GLMBase, "_plan", plan)
    model = daskglm.LogisticRegression().fit(da.from_array(X, chunks=300),
                                             da.from_array(labels, chunks=300))
    (data, made), = plans
    assert data.labels == LabelRequest(np.dtype(np.float64), "counts")
    assert made.problem.n_params == X.shape[1] + 1 and not made.final
    assert model.coef_.shape == (3, X.shape[1])
    expected = daskglm.LogisticRegression().fit(X, labels)
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-6, atol=1e-8)


def test_the_plan_and_the_data_are_frozen():
    X, y, _ = make_data("poisson", n=300, d=3)
    estimator = daskglm.PoissonRegressor()
    data = estimator._fit_data(X, y, None, None, None)
    plan = estimator._plan(data, None)
    assert isinstance(data, FitData) and isinstance(plan, FitPlan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.solver_name = "newton"
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.X = None
    assert plan.start is None and plan.final
    assert plan.first is not None  # the family's start intercept is known before the data


FITS = [
    (daskglm.LogisticRegression(), "binomial", True),
    (daskglm.LogisticRegression(), "multiclass", False),
    (daskglm.Ridge(), "gaussian", False),
    (daskglm.Lasso(alpha=0.01), "gaussian", True),
    (daskglm.GLM("poisson"), "poisson", False),
    (daskglm.SGDClassifier(max_iter=3, early_stopping=True), "multiclass", False),
    (daskglm.SGDClassifier(max_iter=3), "multiclass", True),
    (daskglm.SGDRegressor(max_iter=3, early_stopping=True), "gaussian", False),
]


@pytest.mark.parametrize("case", FITS, ids=lambda c: f"{type(c[0]).__name__}-{c[1]}-"
                                                     f"{'dask' if c[2] else 'numpy'}")
def test_a_fit_leaves_only_parameters_and_fitted_attributes(case):
    """No step of a fit hands state to a later one through the estimator: after ``fit``
    (and after a failed one) it holds its parameters, fitted attributes (ending in
    ``_``) and the state kept for prediction and ``partial_fit``, nothing else."""
    estimator, family, on_dask = case
    X, y, _ = make_data("binomial" if family == "multiclass" else family, n=900, d=4)
    if family == "multiclass":
        y = (np.arange(900) % 3).astype(np.float64)
    if on_dask:
        X, y = da.from_array(X, chunks=300), da.from_array(y, chunks=300)
    estimator = clone(estimator)
    params = set(estimator.get_params())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, y)
    left = {k for k in vars(estimator) if k not in params and not k.endswith("_")}
    assert left <= KEPT_AFTER_FIT
    with pytest.raises(ValueError):
        estimator.fit(X, y, sample_weight=-np.ones(900) if not on_dask
                      else da.full(900, -1.0, chunks=300))
    left = {k for k in vars(estimator) if k not in params and not k.endswith("_")}
    assert left <= KEPT_AFTER_FIT


def test_sgd_start_is_checked_against_the_columns_before_any_pass(monkeypatch):
    X, y, _ = make_data("gaussian", n=300, d=3)
    monkeypatch.setattr(base_module, "make_engine", None)  # no engine may be made
    with pytest.raises(ValueError, match="coef_init does not match"):
        daskglm.SGDRegressor().fit(X, y, coef_init=np.zeros(4))
    assert sgd_module._initial_params(3, None, None, True) is None
