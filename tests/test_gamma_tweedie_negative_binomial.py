"""Gamma, inverse Gaussian, Tweedie and negative binomial: the model math, GLM against
statsmodels (unpenalised) and GammaRegressor/TweedieRegressor against scikit-learn
(penalised), on numpy, Dask chunks and a real LocalCluster."""

import dask.array as da
import numpy as np
import pytest
import statsmodels.api as sm
from sklearn import linear_model as sk
from sklearn.metrics import mean_tweedie_deviance
from sklearn.utils.estimator_checks import check_estimator

import daskglm
from daskglm.model.families import (
    Gamma,
    InverseGaussian,
    NegativeBinomial,
    Tweedie,
    get_family,
)
from daskglm.model.links import Power, get_link

rng = np.random.default_rng(0)

FAMILIES = [Gamma(), Gamma("log"), InverseGaussian(), InverseGaussian("log"), Tweedie(1.5),
            Tweedie(3.0, "identity"), Tweedie(-1.0, "identity"), NegativeBinomial(0.7),
            NegativeBinomial(2.0, "sqrt")]
IDS = ["gamma", "gamma-log", "invgauss", "invgauss-log", "tweedie-1.5", "tweedie-3-identity",
       "tweedie-neg", "negbin", "negbin-sqrt"]


def _positive_data(n=400, d=3, seed=1):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, d))
    mu = np.exp(X @ np.array([0.3, -0.2, 0.1]) + 0.5)
    return X, mu, r


def _mean_and_target(family, r, size=60):
    mu = r.uniform(0.5, 3.0, size)
    if family.distribution.name == "negative_binomial" or family.name == "tweedie" \
            and 1 <= family.power < 2:
        y = r.poisson(mu).astype(float)
    else:
        y = r.gamma(2.0, mu / 2.0)
    return mu, y


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_derivatives_match_finite_differences(family):
    r = np.random.default_rng(2)
    mu, y = _mean_and_target(family, r)
    eta = family.link.link(mu)
    weight = r.uniform(0.5, 2.0, size=mu.size)
    h = 1e-6
    loss = lambda e: family.pointwise_loss(y, e) * weight  # noqa: E731
    np.testing.assert_allclose(family.dloss(y, eta, weight),
                               (loss(eta + h) - loss(eta - h)) / (2 * h), rtol=1e-5, atol=1e-8)
    observed = (family.dloss(y, eta + h, weight) - family.dloss(y, eta - h, weight)) / (2 * h)
    np.testing.assert_allclose(family.observed_d2loss(y, eta, weight), observed,
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("family, exact", [
    (Gamma(), True), (Gamma("log"), False), (InverseGaussian(), True),
    (InverseGaussian("log"), False), (Tweedie(1.0), True), (Tweedie(1.5), False),
    (Tweedie(0.0), False), (Tweedie(2.0), False), (NegativeBinomial(0.7), False),
    (NegativeBinomial(2.0, "sqrt"), False),
], ids=["gamma", "gamma-log", "invgauss", "invgauss-log", "tweedie-1", "tweedie-1.5",
        "tweedie-0", "tweedie-2", "negbin", "negbin-sqrt"])
def test_exact_d2loss_says_whether_d2loss_is_the_second_derivative(family, exact):
    # the negative binomial's and Tweedie's default (log) link is not their natural one:
    # d2loss is then the expected curvature, and the observed one differs from it
    r = np.random.default_rng(3)
    mu, y = _mean_and_target(family, r)
    eta = family.link.link(mu)
    assert family.canonical == (family.link == family.distribution.canonical_link)
    assert family.exact_d2loss is exact
    h = 1e-6
    second = (family.dloss(y, eta + h) - family.dloss(y, eta - h)) / (2 * h)
    np.testing.assert_allclose(family.observed_d2loss(y, eta), second, rtol=1e-5, atol=1e-7)
    if exact:
        np.testing.assert_allclose(family.d2loss(y, eta), second, rtol=1e-5, atol=1e-7)
    else:
        assert np.max(np.abs(family.d2loss(y, eta) - second)) > 1e-3


@pytest.mark.parametrize("family, exact", [
    (Gamma(), True), (Gamma("log"), True), (InverseGaussian(), True),
    (InverseGaussian("log"), False), (Tweedie(1.0), True), (Tweedie(1.5), True),
    (Tweedie(2.0), True), (Tweedie(3.0), False), (Tweedie(0.0), False),
    (Tweedie(1.5, "identity"), False), (NegativeBinomial(0.7), True),
    (NegativeBinomial(2.0, "sqrt"), False),
], ids=["gamma", "gamma-log", "invgauss", "invgauss-log", "tweedie-1", "tweedie-1.5",
        "tweedie-2", "tweedie-3", "tweedie-0", "tweedie-1.5-identity", "negbin",
        "negbin-sqrt"])
def test_newton_curvature_is_exact_where_it_is_never_negative(family, exact):
    # the log link of the Gamma, negative binomial and Tweedie (power in [1, 2]) makes the
    # loss convex in eta at every target: Newton takes its exact curvature there
    r = np.random.default_rng(4)
    mu, y = _mean_and_target(family, r)
    if family.name == "tweedie" and 1 < family.power < 2:
        y[::3] = 0.0  # the compound Poisson-Gamma's zeros
    eta = family.link.link(mu)
    weight = r.uniform(0.5, 2.0, size=mu.size)
    assert family.exact_hessian is exact
    h = 1e-6
    second = (family.dloss(y, eta + h, weight) - family.dloss(y, eta - h, weight)) / (2 * h)
    curvature = family.hessian_d2loss(y, eta, weight)
    if exact:
        np.testing.assert_allclose(curvature, second, rtol=1e-6, atol=1e-8)
        assert np.all(curvature >= 0)
    else:
        np.testing.assert_array_equal(curvature, family.d2loss(y, eta, weight))


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_unit_loss_is_half_deviance_up_to_a_constant(family):
    r = np.random.default_rng(3)
    mu, y = _mean_and_target(family, r)
    other = mu * r.uniform(0.7, 1.4, mu.size)
    dist = family.distribution
    loss_change = dist.unit_loss(y, other) - dist.unit_loss(y, mu)
    deviance_change = [0.5 * (dist.deviance(y[i:i + 1], other[i:i + 1])
                              - dist.deviance(y[i:i + 1], mu[i:i + 1])) for i in range(mu.size)]
    np.testing.assert_allclose(loss_change, deviance_change, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("power", [0.0, 1.0, 1.5, 2.0, 3.0])
def test_tweedie_deviance_is_scikit_learns(power):
    r = np.random.default_rng(4)
    mu = r.uniform(0.5, 3.0, 50)
    y = r.poisson(mu).astype(float) + (power >= 2)
    w = r.uniform(0.5, 2.0, 50)
    ours = Tweedie(power).deviance(y, mu, w) / w.sum()
    assert ours == pytest.approx(mean_tweedie_deviance(y, mu, sample_weight=w, power=power),
                                 rel=1e-12)


def test_negative_binomial_deviance_and_loglik_are_statsmodels():
    r = np.random.default_rng(5)
    mu = r.uniform(0.5, 3.0, 50)
    y = r.poisson(mu).astype(float)
    family = NegativeBinomial(0.6)
    reference = sm.families.NegativeBinomial(alpha=0.6)
    assert family.deviance(y, mu) == pytest.approx(reference.deviance(y, mu), rel=1e-12)
    sums = family.distribution.log_likelihood_sums(y, mu)
    assert family.distribution.log_likelihood(sums, 1.0) == pytest.approx(
        reference.loglike(y, mu), rel=1e-12)


def test_names_and_parameters():
    assert get_family("gamma") == Gamma()
    assert get_family("gamma", "log") == Gamma("log")
    assert get_family("negative_binomial") == NegativeBinomial(1.0)
    assert get_family(Tweedie(1.5), "identity") == Tweedie(1.5, "identity")
    assert get_family("inverse_gaussian").link == Power(-2.0)
    assert get_link("sqrt") == Power(0.5)
    assert Tweedie(1.2) != Tweedie(1.3) and NegativeBinomial(1) != NegativeBinomial(2)
    assert repr(Tweedie(1.5, "identity")) == "Tweedie(power=1.5, link=Identity())"
    with pytest.raises(ValueError, match="needs its power"):
        get_family("tweedie")
    with pytest.raises(ValueError, match="no distribution"):
        Tweedie(0.5)
    with pytest.raises(ValueError, match="alpha"):
        NegativeBinomial(0.0)


# against statsmodels, unpenalised --------------------------------------------------------
def _scotland():
    data = sm.datasets.scotland.load()
    return np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)


@pytest.mark.parametrize("family, reference", [
    (Gamma(), sm.families.Gamma()),
    (Gamma("log"), sm.families.Gamma(sm.families.links.Log())),
    (InverseGaussian(), sm.families.InverseGaussian()),
    (Tweedie(1.5), sm.families.Tweedie(var_power=1.5)),
], ids=["gamma-inverse", "gamma-log", "inverse-gaussian", "tweedie-1.5"])
def test_glm_equals_statsmodels_on_scotland(family, reference):
    X, y = _scotland()
    expected = sm.GLM(y, sm.add_constant(X), family=reference).fit(tol=1e-13, maxiter=200)
    model = daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-8,
                        max_iter=200).fit(X, y)
    # the statsmodels data set's columns differ by 10^4 in scale: 1e-6 relative is tight
    np.testing.assert_allclose(np.r_[model.intercept_, model.coef_], expected.params, rtol=1e-6)


def test_negative_binomial_equals_statsmodels():
    X, mu, r = _positive_data()
    y = r.negative_binomial(1 / 0.5, 1 / (1 + 0.5 * mu)).astype(float)
    expected = sm.GLM(y, sm.add_constant(X), family=sm.families.NegativeBinomial(alpha=0.5)
                      ).fit(tol=1e-13)
    for solver in ("newton", "lbfgs"):
        model = daskglm.GLM(family=NegativeBinomial(0.5), penalty=None, solver=solver,
                            tol=1e-9).fit(X, y)
        np.testing.assert_allclose(np.r_[model.intercept_, model.coef_], expected.params,
                                   rtol=1e-6)


# against scikit-learn, penalised ----------------------------------------------------------
def test_gamma_regressor_equals_scikit_learn():
    X, mu, r = _positive_data()
    y = r.gamma(2.0, mu / 2.0)
    w = r.uniform(0.5, 2.0, y.size)
    expected = sk.GammaRegressor(alpha=0.1, solver="newton-cholesky", tol=1e-12,
                                 max_iter=1000).fit(X, y, sample_weight=w)
    model = daskglm.GammaRegressor(alpha=0.1, tol=1e-10).fit(X, y, sample_weight=w)
    assert model.converged_
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-6)
    assert model.intercept_ == pytest.approx(expected.intercept_, rel=1e-6)
    assert model.score(X, y, w) == pytest.approx(expected.score(X, y, w), rel=1e-6)


@pytest.mark.parametrize("power, link", [(0.0, "auto"), (1.5, "auto"), (2.5, "log"),
                                         (3.0, "auto"), (1.3, "identity")])
def test_tweedie_regressor_equals_scikit_learn(power, link):
    X, mu, r = _positive_data(seed=6)
    y = r.poisson(mu).astype(float) if 1 <= power < 2 else r.gamma(2.0, mu / 2.0)
    X = X if link != "identity" else np.abs(X)
    expected = sk.TweedieRegressor(power=power, alpha=0.05, link=link, solver="newton-cholesky",
                                   tol=1e-12, max_iter=1000).fit(X, y)
    model = daskglm.TweedieRegressor(power=power, alpha=0.05, link=link, tol=1e-10).fit(X, y)
    assert model.converged_
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-6, atol=1e-10)
    assert model.intercept_ == pytest.approx(expected.intercept_, rel=1e-6)
    np.testing.assert_allclose(model.predict(X), expected.predict(X), rtol=1e-6)


def test_tweedie_on_a_cluster_equals_scikit_learn_and_one_chunk(client):
    X, mu, r = _positive_data(n=2000, seed=7)
    y = r.poisson(mu).astype(float)
    expected = sk.TweedieRegressor(power=1.4, alpha=0.02, solver="newton-cholesky", tol=1e-12,
                                   max_iter=1000).fit(X, y)
    chunked = daskglm.TweedieRegressor(power=1.4, alpha=0.02, tol=1e-10).fit(
        da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300))
    assert chunked.comm_.records[0].partitions == 7
    np.testing.assert_allclose(chunked.coef_, expected.coef_, rtol=1e-6)
    one = daskglm.TweedieRegressor(power=1.4, alpha=0.02, tol=1e-10).fit(X, y)
    # the number of chunks changes round-off only
    np.testing.assert_allclose(chunked.coef_, one.coef_, rtol=1e-9)


# bad input ----------------------------------------------------------------------------
def test_negative_target_for_gamma_is_refused_before_any_work():
    X, mu, r = _positive_data()
    y = r.gamma(2.0, mu / 2.0)
    y[3] = -1.0
    model = daskglm.GammaRegressor()
    with pytest.raises(ValueError, match="strictly positive"):
        model.fit(X, y)
    assert not hasattr(model, "comm_")
    with pytest.raises(ValueError, match="strictly positive"):
        daskglm.GLM(family="gamma").fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
    with pytest.raises(ValueError, match="non-negative"):
        daskglm.TweedieRegressor(power=1.5).fit(X, y)
    daskglm.TweedieRegressor(power=0.0).fit(X, y)  # any real target


def test_bad_tweedie_parameters():
    X, mu, r = _positive_data()
    y = r.gamma(2.0, mu / 2.0)
    with pytest.raises(ValueError, match="no distribution"):
        daskglm.TweedieRegressor(power=0.5).fit(X, y)
    with pytest.raises(ValueError, match="link must be"):
        daskglm.TweedieRegressor(link="logit").fit(X, y)


@pytest.mark.parametrize("estimator", [
    daskglm.GammaRegressor(alpha=0.1),
    pytest.param(daskglm.TweedieRegressor(power=1.5, alpha=0.1), marks=pytest.mark.slow),
    pytest.param(daskglm.TweedieRegressor(power=0.0, alpha=0.1), marks=pytest.mark.slow),
    pytest.param(daskglm.GLM("gamma", link="log", penalty=None, inference=True),
                 marks=pytest.mark.slow),
], ids=["gamma", "tweedie-1.5", "tweedie-0", "glm-gamma-inference"])
def test_check_estimator(estimator):
    # only check_array_api_input is skipped, by scikit-learn itself
    results = check_estimator(estimator, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []
