"""Penalties say what they are, and solvers and kernels ask: a penalty class defined only
here, which declares its capabilities, is solved by every solver they admit, with no edit
outside ``daskglm/model``.

References: the closed form of the penalised least squares (Gaussian), and
``scipy.optimize.minimize`` on the same objective (binomial), at rtol 1e-6.  SGD reaches
only a neighbourhood of the optimum: there the objective's relative gap is bounded by 1e-4
(averaged Adagrad, 30 epochs; ``tests/test_sgd.py`` bounds it by 1e-3).
"""

import dask.array as da
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from daskglm.compute.local_sgd_rounds import compiled_local_steps_apply
from daskglm.compute.parameter_server import compiled_steps_apply
from daskglm.compute.stochastic import SGDConfig
from daskglm.engine import make_engine
from daskglm.model.families import Binomial, Gaussian
from daskglm.model.penalties import L1, L2, ElasticNet, NonNegative, NoPenalty, Penalty
from daskglm.optim.schedules import make_step_rule
from daskglm.solvers import Problem, get_solver

N, D = 1200, 4
STRENGTHS = np.array([0.02, 0.2, 0.0, 1.0])


class WeightedL2(Penalty):
    """``sum_j s_j / 2 * coef_j^2``: a ridge with one strength per coefficient."""

    name = "weighted-l2"
    quadratic = True  # smooth by default; not a uniform ridge: l2_strength stays None

    def __init__(self, strengths):
        self.strengths = np.asarray(strengths, dtype=float)

    def value(self, coef):
        return 0.5 * float(self.strengths @ (coef * coef))

    def grad(self, coef):
        return self.strengths * coef

    def hess_diag(self, coef):
        return self.strengths + 0.0 * coef

    def prox(self, coef, step):
        return coef / (1.0 + step * self.strengths)


class UniformRidge(WeightedL2):
    """A uniform ridge written from scratch, which says so: the kernels with a built-in L2
    decay (the compiled SGD loops, Hogwild) take it as they take :class:`L2`."""

    name = "uniform-ridge"
    l1_strength = 0.0

    def __init__(self, alpha, n_features):
        super().__init__(np.full(n_features, float(alpha)))
        self.l2_strength = float(alpha)


def _data(family, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) + 0.3
    eta = X @ np.array([0.8, -0.5, 0.3, 1.2]) + 0.4
    if family == "gaussian":
        y = eta + rng.normal(size=N)
    else:
        y = (rng.uniform(size=N) < expit(eta)).astype(float)
    return X, y


def _reference(family, X, y, strengths):
    """The minimiser of ``mean loss + sum s_j / 2 coef_j^2`` (intercept unpenalised)."""
    A = np.column_stack([X, np.ones(len(y))])
    s = np.append(strengths, 0.0)
    if family == "gaussian":
        return np.linalg.solve(A.T @ A / len(y) + np.diag(s), A.T @ y / len(y))

    def objective(params):
        eta = A @ params
        loss = np.mean(np.logaddexp(0.0, eta) - y * eta) + 0.5 * s @ params**2
        return loss, A.T @ (expit(eta) - y) / len(y) + s * params

    found = minimize(objective, np.zeros(A.shape[1]), jac=True, method="BFGS",
                     options={"gtol": 1e-13, "maxiter": 10_000})
    return found.x


def _inputs(X, y, kind):
    if kind == "numpy":
        return X, y, 3
    return da.from_array(X, chunks=(250, D)), da.from_array(y, chunks=250), None


def _solve(name, problem, X, y, kind, options=None, max_iter=500, tol=1e-12):
    X_in, y_in, n_partitions = _inputs(X, y, kind)
    with make_engine(X_in, y_in, family=problem.family, client=None,
                     n_partitions=n_partitions) as engine:
        solver = get_solver(name, problem, tol=tol, max_iter=max_iter, options=options)
        return solver.solve(problem, engine, np.zeros(problem.n_params))


SOLVERS = {"gaussian": ["normal", "lbfgs", "newton", "proximal"],
           "binomial": ["lbfgs", "newton", "proximal"]}


@pytest.mark.parametrize("kind", ["numpy", "dask"])
@pytest.mark.parametrize("family, name", [(f, s) for f, names in SOLVERS.items() for s in names])
def test_a_penalty_defined_here_is_solved_by_every_solver_it_admits(family, name, kind):
    X, y = _data(family)
    problem = Problem(Gaussian() if family == "gaussian" else Binomial(),
                      WeightedL2(STRENGTHS), True, D)
    result = _solve(name, problem, X, y, kind, max_iter=1 if name == "normal" else 5000)
    expected = _reference(family, X, y, STRENGTHS)
    np.testing.assert_allclose(result.params, expected, rtol=1e-6, atol=1e-8)


def _objective(problem, X, y, params):
    coef, intercept = problem.split(params)
    return problem.family.loss(y, X @ coef + intercept, None) / len(y) + problem.penalty.value(coef)


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_sgd_takes_it_through_its_gradient(family):
    X, y = _data(family, seed=1)
    problem = Problem(Gaussian() if family == "gaussian" else Binomial(),
                      WeightedL2(STRENGTHS), True, D)
    options = {"batch_size": 64, "random_state": 0, "learning_rate": "adagrad", "eta0": 0.5,
               "average": True}
    result = _solve("sgd", problem, X, y, "numpy", options=options, max_iter=30, tol=None)
    best = _objective(problem, X, y, _reference(family, X, y, STRENGTHS))
    assert (_objective(problem, X, y, result.params) - best) / abs(best) <= 1e-4


@pytest.mark.parametrize("options", [{}, {"sync_every": 4}], ids=["synchronous", "local"])
def test_a_declared_uniform_ridge_takes_the_paths_of_l2(options):
    """The compiled loops ask for the strengths: the same iterates as :class:`L2`."""
    X, y = _data("binomial", seed=2)
    options = {"batch_size": 64, "random_state": 0, "learning_rate": "invscaling",
               "eta0": 0.2, "power_t": 0.5, **options}
    results = [_solve("sgd", Problem(Binomial(), penalty, True, D), X, y, "numpy",
                      options=options, max_iter=3, tol=None).params
               for penalty in (L2(0.05), UniformRidge(0.05, D))]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-14)


def test_the_compiled_sgd_loops_ask_for_the_strengths():
    X, y = _data("binomial")
    rule = make_step_rule("invscaling", 0.2, 0.5)

    def config(penalty):
        return SGDConfig(Binomial(), penalty, rule, True, D, 64, N, float(N), seed=0)

    assert compiled_local_steps_apply((X, y, None), [64], config(UniformRidge(0.05, D)))
    assert compiled_steps_apply((X, y, None), config(UniformRidge(0.05, D)))
    assert not compiled_local_steps_apply((X, y, None), [64], config(WeightedL2(STRENGTHS)))
    assert not compiled_steps_apply((X, y, None), config(WeightedL2(STRENGTHS)))


def test_hogwild_asks_whether_the_penalty_is_a_uniform_ridge():
    X, y = _data("binomial", seed=3)
    options = {"hogwild": 1, "learning_rate": "constant", "eta0": 0.05, "random_state": 0}
    results = [_solve("sgd", Problem(Binomial(), penalty, True, D), X, y, "numpy",
                      options=options, max_iter=2, tol=None).params
               for penalty in (L2(0.05), UniformRidge(0.05, D))]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="needs no penalty or an L2 penalty"):
        _solve("sgd", Problem(Binomial(), WeightedL2(STRENGTHS), True, D), X, y, "numpy",
               options=options, max_iter=2, tol=None)


@pytest.mark.parametrize("penalty, strengths, ridge, bounds", [
    (NoPenalty(), (0.0, 0.0), 0.0, False),
    (L2(0.0), (0.0, 0.0), 0.0, False),
    (L2(0.5), (0.5, 0.0), 0.5, True),
    (L1(0.5), (0.0, 0.5), None, True),
    (ElasticNet(1.0, 0.25), (0.75, 0.25), None, True),
    (ElasticNet(1.0, 0.0), (1.0, 0.0), None, False),
    (NonNegative(L2(0.5)), None, None, False),
    (WeightedL2(STRENGTHS), None, None, False),
])
def test_the_built_in_penalties_declare_what_they_are(penalty, strengths, ridge, bounds):
    assert penalty.elastic_net_strengths == strengths
    assert penalty.ridge_strength == ridge
    assert penalty.bounds_optimum is bounds
