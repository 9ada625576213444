"""The loss objects of compute/losses.py: what a round of a problem's loss runs, and the one
place that tells a GLM family from the multinomial model."""

import pathlib

import numpy as np
import pytest

import daskglm
from daskglm.compute.class_coordinates import PerClassCoordinates
from daskglm.compute.coordinates import Standardised
from daskglm.compute.kernels import loss_grad, loss_grad_hess
from daskglm.compute.label_counts import count_labels
from daskglm.compute.losses import FamilyLoss, SoftmaxLoss, loss_of
from daskglm.compute.multinomial import multinomial_loss_grad, multinomial_loss_grad_hess
from daskglm.compute.sgd_losses import Hinge
from daskglm.model.families import Binomial, Gamma, Poisson
from daskglm.model.multinomial import Multinomial, MultinomialProblem
from daskglm.model.penalties import L2
from daskglm.model.problem import Problem


def _problem(family, n_features=3, fit_intercept=True):
    return Problem(family, L2(0.1), fit_intercept, n_features)


def test_a_family_problem_has_a_family_loss_with_its_kernels():
    loss = loss_of(_problem(Poisson()))
    assert isinstance(loss, FamilyLoss) and loss.single_output
    params = np.zeros(4)
    assert loss.evaluation(params) == (loss_grad, (params, Poisson(), True))
    assert loss.evaluation(params, hessian=True) == (loss_grad_hess, (params, Poisson(), True))
    coordinates = Standardised(np.ones(3), np.zeros(3))
    assert loss.per_class(coordinates) is coordinates


def test_the_multinomial_problem_has_the_softmax_loss():
    problem = MultinomialProblem(Multinomial(4), L2(0.1), True, 3, n_classes=4)
    loss = loss_of(problem)
    assert isinstance(loss, SoftmaxLoss) and not loss.single_output and loss.exact_hessian
    params = np.zeros(16)
    assert loss.evaluation(params) == (multinomial_loss_grad, (params, 4, True))
    assert loss.evaluation(params, hessian=True)[0] is multinomial_loss_grad_hess
    per_class = loss.per_class(Standardised(np.ones(3), np.zeros(3)))
    assert isinstance(per_class, PerClassCoordinates) and per_class.n_classes == 4


@pytest.mark.parametrize("family, exact", [(Binomial(), True), (Poisson(), True),
                                           (Binomial("probit"), False), (Gamma("log"), True),
                                           (Hinge(), False)])
def test_exact_hessian_follows_the_family(family, exact):
    assert loss_of(_problem(family)).exact_hessian is exact


@pytest.mark.parametrize("n_classes", [2, 4])
def test_evaluation_from_class_counts_equals_the_kernel_at_zero_coefficients(n_classes):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = rng.integers(0, n_classes, 300).astype(float)
    weight = rng.uniform(0.5, 2.0, 300)
    part = (X, y, weight)
    counts = count_labels(part, per_class_moments=True)
    if n_classes == 2:
        problem = _problem(Binomial())
        params = np.r_[np.zeros(3), 0.4]
    else:
        problem = MultinomialProblem(Multinomial(n_classes), L2(0.1), True, 3,
                                     n_classes=n_classes)
        params = np.r_[np.zeros(3 * n_classes), np.linspace(-0.5, 0.5, n_classes)]
    loss = loss_of(problem)
    kernel, args = loss.evaluation(params)
    expected = kernel(part, *args)
    found = loss.evaluation_from_class_counts(counts, None, params)
    np.testing.assert_allclose(found.loss, expected.loss, rtol=1e-12)
    np.testing.assert_allclose(found.grad, expected.grad, rtol=1e-10, atol=1e-10)


def test_no_solver_tells_the_multinomial_model_apart_itself():
    # binary against multinomial is the loss's concern (compute/losses.py), not the solvers'
    solvers = pathlib.Path(daskglm.__file__).parent / "solvers"
    for module in solvers.glob("*.py"):
        text = module.read_text()
        assert "MultinomialProblem" not in text, module.name
        assert "multinomial_loss_grad" not in text, module.name
