"""Typed solver options (:mod:`daskglm.solvers.options`): one dataclass per solver, taken
by ``solver_options`` as a dict is, checked when made."""

import dataclasses

import numpy as np
import pytest
from sklearn.base import clone

import daskglm
from daskglm.solvers import SOLVERS
from daskglm.solvers.options import (
    LBFGSOptions,
    NewtonOptions,
    SGDOptions,
    SolverOptions,
    options_type,
)
from tests.conftest import make_data


def test_every_solver_has_typed_options_with_its_defaults():
    for name, cls in SOLVERS.items():
        options = options_type(name)()
        assert isinstance(options, SolverOptions) and options.solver == name
        assert options.as_dict() == cls.options


def test_typed_options_fit_as_the_same_dict_does():
    X, y, _ = make_data("binomial", n=1500)
    typed = daskglm.LogisticRegression(solver="lbfgs", tol=1e-10,
                                       solver_options=LBFGSOptions(memory=3)).fit(X, y)
    plain = daskglm.LogisticRegression(solver="lbfgs", tol=1e-10,
                                       solver_options={"memory": 3}).fit(X, y)
    np.testing.assert_array_equal(typed.coef_, plain.coef_)
    assert typed.solver_options_["memory"] == 3
    assert "LBFGSOptions(memory=3" in repr(typed)
    assert clone(typed).solver_options == LBFGSOptions(memory=3)


def test_typed_options_are_checked_when_made_and_against_the_solver():
    with pytest.raises(ValueError, match="'memory' of solver 'lbfgs' must be an integer"):
        LBFGSOptions(memory=0)
    with pytest.raises(TypeError):
        LBFGSOptions(step=1)  # no such option
    with pytest.raises(dataclasses.FrozenInstanceError):
        LBFGSOptions().memory = 4
    X, y, _ = make_data("binomial", n=300)
    with pytest.raises(ValueError, match="NewtonOptions .* but the solver is 'lbfgs'"):
        daskglm.LogisticRegression(solver="lbfgs", solver_options=NewtonOptions()).fit(X, y)
    with pytest.raises(TypeError, match="solver_options must be"):
        daskglm.LogisticRegression(solver_options=[("memory", 3)]).fit(X, y)


def test_the_sgd_estimators_take_only_the_typed_options_set():
    """An SGD estimator's own parameters (batch_size, ...) are not overridden by the
    defaults a typed options object carries."""
    X, y, _ = make_data("binomial", n=2000)
    typed = daskglm.SGDClassifier(batch_size=50, max_iter=2, tol=None, random_state=0,
                                  solver_options=SGDOptions(sync_every=None)).fit(X, y)
    plain = daskglm.SGDClassifier(batch_size=50, max_iter=2, tol=None, random_state=0,
                                  solver_options={"sync_every": None}).fit(X, y)
    np.testing.assert_array_equal(typed.coef_, plain.coef_)
    assert typed.solver_options_["batch_size"] == 50
