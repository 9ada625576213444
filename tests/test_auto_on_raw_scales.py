"""``solver="auto"`` on features left on their natural scales: a first-order method must
drive its gradient far below ``tol`` where a column is in the thousands (the optimality
test is on the original coefficients), so after the validation round measured the
columns the choice is made again with that spread; Newton's steps do not depend on the
scales.  Before, a 5-class model with an exposure column stopped at ``max_iter=100``."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

import daskglm
from daskglm.accounting.choice import criterion_spread, predict_methods
from daskglm.model.families import Binomial
from daskglm.model.penalties import L2
from daskglm.solvers import Problem


def test_the_spread_is_the_size_of_the_largest_column():
    means = np.array([0.0, 1000.0, 0.1, 1e-4])
    sds = np.array([1.0, 700.0, 0.3, 0.01])
    squares = sds**2 + means**2
    assert criterion_spread(means, squares) == pytest.approx(1700.0)
    # standardised columns, dummies and rare hashed columns need no tighter gradient
    assert criterion_spread(means[[0, 2, 3]], squares[[0, 2, 3]]) < 1.5


def test_first_order_methods_are_priced_for_the_tighter_gradient():
    problem = Problem(Binomial(), L2(1e-6), True, 20)
    plain = {c.method: c.rounds for c in predict_methods(problem, 10**6)}
    raw = {c.method: c.rounds for c in predict_methods(problem, 10**6, spread=1000.0)}
    assert raw["lbfgs"] == plain["lbfgs"] + 9 and raw["newton"] == plain["newton"]


def _raw_table(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"age": rng.uniform(18, 90, n), "log_density": rng.normal(8, 2, n),
                          "exposure": rng.gamma(2.0, 500.0, n),
                          "region": pd.Categorical(rng.integers(0, 10, n).astype(str))})
    design = np.column_stack([table.age, table.log_density, table.exposure,
                              pd.get_dummies(table.region, drop_first=True).to_numpy(float)])
    scales = np.r_[0.03, 0.2, 0.001, np.full(9, 0.5)]
    eta = design @ (rng.normal(size=(design.shape[1], 5)) * scales[:, None])
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return table, design, y


@pytest.mark.parametrize("layout", ["table", "array"])
def test_a_multinomial_model_on_raw_columns_converges_at_the_defaults(layout):
    table, design, y = _raw_table()
    X = table if layout == "table" else design
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = daskglm.LogisticRegression().fit(X, y)
    assert model.converged_ and model.solver_ == "newton"
    value, reason = model.comm_.choices["solver"]
    assert value == "newton" and "scales" in reason
    # the same optimum as L-BFGS run to a tight tolerance
    reference = daskglm.LogisticRegression(solver="lbfgs", tol=1e-9, max_iter=5000).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=1e-5)


def test_standardised_columns_keep_the_first_choice():
    _, design, y = _raw_table()
    standardised = (design - design.mean(axis=0)) / design.std(axis=0)
    model = daskglm.LogisticRegression().fit(standardised, y)
    assert "solver" not in model.comm_.choices
