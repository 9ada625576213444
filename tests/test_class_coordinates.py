"""The multinomial model's iteration coordinates across the classes
(:mod:`daskglm.compute.class_coordinates`) and its start at the classes' shares
(:meth:`~daskglm.model.multinomial.MultinomialProblem.intercept_only_start`): a class
with 0.1% of the rows left L-BFGS and gradient descent at ``max_iter`` on raw-scale
columns; both now converge at their defaults to Newton's optimum."""

import warnings

import numpy as np
import pytest

import daskglm
from benchmarks.auto_cases import raw_scales
from daskglm.compute.class_coordinates import MAX_CLASS_SCALE, PerClassCoordinates, class_mixing
from daskglm.compute.coordinates import Standardised
from daskglm.compute.multinomial import multinomial_loss_grad
from daskglm.model.multinomial import Multinomial, MultinomialProblem
from daskglm.model.penalties import L2


def _curvature(shares):
    return np.diag(shares) - np.outer(shares, shares)


def test_the_mixing_evens_out_the_class_curvature_and_keeps_the_sum_of_the_classes():
    """``A S A = c (I - 11^T / K)`` with ``c`` the mean of ``diag(S)`` (to 1e-12), ``A``
    symmetric, ``A 1 = 1``; a class far rarer than ``1 / MAX_CLASS_SCALE`` of the
    average curvature is raised by at most ``MAX_CLASS_SCALE``."""
    shares = np.array([0.001, 0.2, 0.13, 0.22, 0.449])
    curvature = _curvature(shares)
    mixing = class_mixing(curvature)
    K = shares.size
    target = np.mean(np.diag(curvature))
    np.testing.assert_allclose(mixing, mixing.T, atol=1e-14)
    np.testing.assert_allclose(mixing @ np.ones(K), np.ones(K), atol=1e-12)
    np.testing.assert_allclose(mixing @ curvature @ mixing,
                               target * (np.eye(K) - np.ones((K, K)) / K), atol=1e-12)
    tiny = class_mixing(_curvature(np.array([1e-9, 0.5, 0.5 - 1e-9])))
    assert np.linalg.eigvalsh(tiny @ tiny).max() <= MAX_CLASS_SCALE * (1 + 1e-9)
    # a penalty that dominates a class's curvature leaves little to even out
    assert np.abs(class_mixing(curvature, relative_penalty=10.0) - np.eye(K)).max() < 0.2


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_mixed_coordinates_invert_and_follow_the_chain_rule(fit_intercept):
    """``to_params`` inverts ``to_theta``, ``grad_to_theta`` is the gradient in ``theta``
    of a quadratic of the parameters (its Jacobian formed column by column), and
    ``grad_to_params`` inverts it; to 1e-10.  A proximal step refuses a mixing."""
    rng = np.random.default_rng(0)
    d, K = 3, 4
    one_class = Standardised(rng.uniform(0.5, 2.0, d), rng.normal(size=d) if fit_intercept
                             else None)
    mixing = class_mixing(_curvature(np.array([0.01, 0.3, 0.29, 0.4])))
    coordinates = PerClassCoordinates(one_class, d, K, fit_intercept, mixing)
    n = K * (d + int(fit_intercept))
    params = rng.normal(size=n)
    np.testing.assert_allclose(coordinates.to_params(coordinates.to_theta(params)), params,
                               atol=1e-12)
    jacobian = np.column_stack([coordinates.to_params(e) for e in np.eye(n)])
    B = rng.normal(size=(n, n))
    grad = B.T @ (B @ params)  # of |B params|^2 / 2
    np.testing.assert_allclose(coordinates.grad_to_theta(grad), jacobian.T @ grad, rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(coordinates.grad_to_params(coordinates.grad_to_theta(grad)), grad,
                               rtol=1e-10, atol=1e-10)
    bound = coordinates.gradient_factor()
    assert np.abs(grad).max() <= bound * np.abs(coordinates.grad_to_theta(grad)).max() * (1 + 1e-12)
    with pytest.raises(ValueError, match="without a class mixing"):
        coordinates.prox(L2(1.0), coordinates.to_theta(params), 0.1)


def test_the_start_at_the_class_shares_gives_the_value_and_gradient_an_evaluation_does():
    """From the value and gradient at zero parameters, the moved intercepts are the log
    of the classes' weighted shares, and the value and gradient there are those of a
    direct evaluation (weighted rows, an L2 penalty), to 1e-12."""
    rng = np.random.default_rng(1)
    n, d, K = 500, 4, 3
    X = rng.normal(size=(n, d)) + rng.normal(size=d)
    y = rng.choice(K, size=n, p=[0.05, 0.35, 0.6]).astype(float)
    weight = rng.uniform(0.5, 2.0, n)
    problem = MultinomialProblem(Multinomial(K), L2(0.3), True, d, n_classes=K)

    def evaluate(params):
        stats = multinomial_loss_grad((X, y, weight), params, K, True)
        total = weight.sum()
        grad = stats.grad / total
        grad[: K * d] += 0.3 * params[: K * d]
        return stats.loss / total + 0.15 * params[: K * d] @ params[: K * d], grad

    params0 = np.zeros(problem.n_params)
    means = weight @ X / weight.sum()
    moved, value, grad = problem.intercept_only_start(params0, *evaluate(params0), means)
    shares = np.bincount(y.astype(int), weights=weight) / weight.sum()
    np.testing.assert_allclose(np.exp(moved[K * d:]) / np.exp(moved[K * d:]).sum(), shares,
                               rtol=1e-12)
    assert not np.any(moved[: K * d]) and abs(moved[K * d:].sum()) < 1e-12
    direct_value, direct_grad = evaluate(moved)
    assert value == pytest.approx(direct_value, rel=1e-12)
    np.testing.assert_allclose(grad, direct_grad, atol=1e-12)
    warm = params0.copy()
    warm[0] = 0.1
    assert problem.intercept_only_start(warm, *evaluate(warm), means) is None


@pytest.mark.parametrize("solver", ["lbfgs", "gd"])
def test_a_rare_class_on_raw_scales_converges_at_the_defaults(solver):
    """Five classes, one with 0.1% of the rows, an age, a log density, an exposure in the
    thousands and a 10-level categorical on their natural scales
    (``benchmarks.auto_cases.raw_scales``, 200,000 rows): L-BFGS and gradient descent at
    their defaults converge within ``max_iter=100`` (both stopped there before, L-BFGS
    1e-3 away in its largest coefficient), to Newton's coefficients at ``tol=1e-10``
    within 1e-3 (the criterion is ``tol=1e-4`` on the gradient)."""
    X, y = raw_scales(200_000)
    assert np.bincount(y).min() / y.size < 0.002
    reference = daskglm.LogisticRegression(solver="newton", tol=1e-10).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = daskglm.LogisticRegression(solver=solver).fit(X, y)
    assert model.converged_ and model.n_iter_[0] < 60
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-3)
    np.testing.assert_allclose(model.predict_proba(X[:1000]), reference.predict_proba(X[:1000]),
                               atol=1e-5)


def test_each_class_standardised_by_its_own_hessian_block():
    """``PerClassCoordinates.from_hessian`` (proximal Newton's quadratic model of the
    multinomial model): in ``theta`` every coefficient of class ``k`` has the curvature of
    class ``k``'s intercept (its own block centred and scaled), a rare class's as much as
    the others'; ``jacobian`` is ``d params / d theta``."""
    rng = np.random.default_rng(4)
    n, d, K = 2000, 3, 3
    X = rng.normal(size=(n, d)) * [1.0, 50.0, 0.01] + [0.0, 100.0, 5.0]
    prob = np.array([0.002, 0.4, 0.598])
    S = np.diag(prob) - np.outer(prob, prob)
    X1 = np.column_stack([X, np.ones(n)])
    full = np.kron(S, X1.T @ X1 / n)  # class by class, intercept last in each block
    order = [k * (d + 1) + j for k in range(K) for j in range(d)] + \
        [k * (d + 1) + d for k in range(K)]
    hess = full[np.ix_(order, order)]  # the multinomial layout
    coordinates = PerClassCoordinates.from_hessian(hess, d, K, True)
    jacobian = coordinates.jacobian(hess.shape[0])
    theta_hess = jacobian.T @ hess @ jacobian
    for k in range(K):
        np.testing.assert_allclose(np.diag(theta_hess)[k * d:(k + 1) * d], S[k, k], rtol=1e-10)
    unit = np.zeros(hess.shape[0])
    unit[4] = 1.0
    np.testing.assert_allclose(jacobian @ unit, coordinates.to_params(unit), atol=1e-15)
