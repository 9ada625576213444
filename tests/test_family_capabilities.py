"""Families say what they can do, and estimators ask: distributions and a family defined
only here, which declare their capabilities (``squared_error``,
``allows_negative_targets``, ``has_unit_dispersion``, ``counts_trials``,
``starts_at_mean_target``), fit, score and report as the built-in ones, with no edit
in ``daskglm/``.

References: statsmodels' GLM (parameters, standard errors, log-likelihood; rtol 1e-6),
scikit-learn's ``LassoCV`` on the same folds and grid (chosen alpha exactly, coefficients
at rtol 1e-6) and ``r2_score`` (rtol 1e-10).
"""

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import xlogy
from sklearn.linear_model import LassoCV
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold

import daskglm
from daskglm.model.distributions import Distribution
from daskglm.model.distributions_extra import GammaDistribution, NegativeBinomialDistribution
from daskglm.model.families import (
    Binomial,
    Family,
    Gamma,
    Gaussian,
    InverseGaussian,
    NegativeBinomial,
    Poisson,
    Tweedie,
)
from daskglm.model.links import Identity, Logit
from daskglm.model.multinomial import Multinomial

#: Relative tolerance against statsmodels.
RTOL = 1e-6


class Normal(Distribution):
    """The normal distribution written from scratch, which says that its loss is squared
    error and its targets may be negative."""

    name = "normal-here"
    canonical_link = Identity()
    squared_error = True
    allows_negative_targets = True

    def unit_loss(self, y, mu):
        return 0.5 * (y - mu) ** 2

    def variance(self, mu):
        return np.ones_like(mu)

    def variance_derivative(self, mu):
        return np.zeros_like(mu)

    def deviance(self, y, mu, weight=None):
        squares = (y - mu) ** 2
        return float(np.sum(squares if weight is None else weight * squares))

    def log_likelihood_sums(self, y, mu, weight=None):
        total = float(len(y)) if weight is None else float(np.sum(weight))
        return np.array([self.deviance(y, mu, weight), total])

    def log_likelihood(self, sums, scale):
        squares, total = sums
        return -0.5 * (squares / scale + total * np.log(2.0 * np.pi * scale))


class Proportion(Distribution):
    """The binomial distribution of proportions written from scratch, which says that its
    weights may count trials and that its dispersion is 1."""

    name = "proportion-here"
    canonical_link = Logit()
    start_mean = 0.5
    has_unit_dispersion = True
    counts_trials = True

    def unit_loss(self, y, mu):
        return -(xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu))

    def variance(self, mu):
        return mu * (1.0 - mu)

    def variance_derivative(self, mu):
        return 1.0 - 2.0 * mu

    def clip_mean(self, mu):
        return np.clip(mu, 1e-12, 1.0 - 1e-12)

    def deviance(self, y, mu, weight=None):
        with np.errstate(divide="ignore", invalid="ignore"):
            saturated = np.where(y > 0, y * np.log(y / mu), 0.0) + np.where(
                y < 1, (1.0 - y) * np.log((1.0 - y) / (1.0 - mu)), 0.0)
        return float(np.sum(2.0 * saturated if weight is None else 2.0 * weight * saturated))

    def log_likelihood_sums(self, y, mu, weight=None):
        mu = self.clip_mean(mu)
        per_row = xlogy(y, mu) + xlogy(1.0 - y, 1.0 - mu)
        return np.array([float(np.sum(per_row if weight is None else weight * per_row))])

    def log_likelihood(self, sums, scale):
        return float(sums[0])


class GammaFromTheMean(Family):
    """A Gamma family with the inverse link (where ``eta = 0`` is no mean) that says it
    starts its fits from the mean target."""

    starts_at_mean_target = True


def _regression(seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ np.array([1.5, -2.0, 0.5]) - 3.0 + rng.normal(size=n)
    return X, y


def _statsmodels(endog, X, family):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.GLM(endog, sm.add_constant(X), family=family).fit(tol=1e-13)


def _glm(family):
    return daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-12, max_iter=200,
                       inference=True)


def test_a_normal_defined_here_is_least_squares_with_estimated_dispersion():
    X, y = _regression()
    model = _glm(Family(Normal())).fit(X, y)
    expected = _statsmodels(y, X, sm.families.Gaussian())
    for ours, theirs in [("params_", "params"), ("bse_", "bse"), ("llf_", "llf")]:
        np.testing.assert_allclose(getattr(model, ours), getattr(expected, theirs), rtol=RTOL,
                                   err_msg=ours)
    assert model.__sklearn_tags__().target_tags.positive_only is False
    np.testing.assert_allclose(model.score(X, y), r2_score(y, model.predict(X)), rtol=1e-10)


def test_a_normal_defined_here_takes_the_lasso_path():
    X, y = _regression(seed=1)
    alphas = np.geomspace(1.0, 1e-3, 8)
    ours = daskglm.GLMCV(family=Family(Normal()), alphas=alphas, cv=KFold(4), tol=1e-10).fit(X, y)
    theirs = LassoCV(alphas=alphas, cv=KFold(4), tol=1e-12, max_iter=100_000).fit(X, y)
    assert ours.alpha_ == theirs.alpha_
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=RTOL, atol=1e-8)
    np.testing.assert_allclose(ours.deviance_path_, theirs.mse_path_ / 2, rtol=RTOL)


def test_a_binomial_defined_here_takes_two_columns_of_counts():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    trials = rng.integers(5, 30, size=60).astype(float)
    p = 1.0 / (1.0 + np.exp(-(X @ np.array([0.8, -0.6]) + 0.3)))
    successes = rng.binomial(trials.astype(int), p).astype(float)
    counts = np.column_stack([successes, trials - successes])
    model = _glm(Family(Proportion())).fit(X, counts)
    expected = _statsmodels(counts, X, sm.families.Binomial())
    assert model.weights_kind_ == "trials"
    for ours, theirs in [("params_", "params"), ("bse_", "bse"), ("llf_", "llf")]:
        np.testing.assert_allclose(getattr(model, ours), getattr(expected, theirs), rtol=RTOL,
                                   err_msg=ours)
    assert model.dispersion_ == 1.0


def test_a_family_defined_here_starts_from_the_mean_target():
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 1.0, size=(300, 2))
    mean = 1.0 / (X @ np.array([0.5, 0.25]) + 0.2)
    y = rng.gamma(shape=4.0, scale=mean / 4.0)
    family = GammaFromTheMean(GammaDistribution())
    assert family.canonical and family.start_intercept() == pytest.approx(1.0)
    model = _glm(family).fit(X, y)
    expected = _statsmodels(y, X, sm.families.Gamma())
    for ours, theirs in [("params_", "params"), ("bse_", "bse")]:
        np.testing.assert_allclose(getattr(model, ours), getattr(expected, theirs), rtol=RTOL,
                                   err_msg=ours)


@pytest.mark.parametrize("family, declared", [
    (Gaussian(), (True, True, False, False, False)),
    (Gaussian("log"), (True, True, False, False, False)),
    (Binomial(), (False, False, True, True, False)),
    (Poisson(), (False, False, True, False, False)),
    (NegativeBinomial(0.5), (False, False, True, False, True)),
    (Family(NegativeBinomialDistribution(0.5)), (False, False, True, False, False)),
    (Gamma(), (False, False, False, False, True)),
    (InverseGaussian(), (False, False, False, False, True)),
    (Tweedie(1.5), (False, False, False, False, True)),
])
def test_the_built_in_families_declare_what_they_are(family, declared):
    distribution = family.distribution
    assert (distribution.squared_error, distribution.allows_negative_targets,
            distribution.has_unit_dispersion, distribution.counts_trials,
            family.starts_at_mean_target) == declared
    assert family.quadratic is (declared[0] and family.link == Identity())
    assert not getattr(family, "predictor_per_class", False)
    assert Multinomial(3).predictor_per_class
