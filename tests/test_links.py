"""Links apart from distributions: link functions, chain-rule families, fits against statsmodels."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.utils.estimator_checks import check_estimator

import daskglm
from daskglm.model.distributions import (
    BinomialDistribution,
    GaussianDistribution,
    PoissonDistribution,
)
from daskglm.model.families import Binomial, Family, Gaussian, Poisson, get_family
from daskglm.model.links import CLogLog, Identity, Inverse, Log, Logit, Power, Probit, get_link

LINKS = [Identity(), Logit(), Log(), Inverse(), Probit(), CLogLog(), Power(0.5), Power(2.0),
         Power(-1.5)]
DISTRIBUTIONS = [GaussianDistribution(), BinomialDistribution(), PoissonDistribution()]
PAIRS = [(d, link) for d in DISTRIBUTIONS for link in LINKS]


def _pair_id(pair):
    distribution, link = pair
    return f"{distribution.name}-{link!r}"


def _means(rng, size=60):
    # inside the domain of every link and every distribution in scope
    return rng.uniform(0.05, 0.95, size=size)


def _target(distribution, mu, rng):
    if isinstance(distribution, BinomialDistribution):
        return (rng.uniform(size=mu.size) < mu).astype(float)
    if isinstance(distribution, PoissonDistribution):
        return rng.poisson(3.0 * mu).astype(float)
    return mu + rng.normal(size=mu.size)


@pytest.mark.parametrize("link", LINKS, ids=repr)
def test_inverse_of_link_is_the_mean(link):
    mu = _means(np.random.default_rng(0), 200)
    np.testing.assert_allclose(link.inverse(link.link(mu)), mu, rtol=1e-12, atol=0)


@pytest.mark.parametrize("link", LINKS, ids=repr)
def test_link_derivatives_match_finite_differences(link):
    eta = link.link(_means(np.random.default_rng(1), 200))
    h = 1e-6
    d1 = (link.inverse(eta + h) - link.inverse(eta - h)) / (2 * h)
    np.testing.assert_allclose(link.inverse_derivative(eta), d1, rtol=1e-6, atol=1e-9)
    d2 = (link.inverse_derivative(eta + h) - link.inverse_derivative(eta - h)) / (2 * h)
    np.testing.assert_allclose(link.inverse_second_derivative(eta), d2, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_dloss_matches_finite_differences_of_the_loss(pair):
    distribution, link = pair
    family = Family(distribution, link)
    rng = np.random.default_rng(2)
    mu = _means(rng)
    eta, y = link.link(mu), _target(distribution, mu, rng)
    weight = rng.uniform(0.5, 2.0, size=mu.size)
    h = 1e-6
    numeric = (family.pointwise_loss(y, eta + h) - family.pointwise_loss(y, eta - h)) / (2 * h)
    np.testing.assert_allclose(family.dloss(y, eta, weight), weight * numeric, rtol=1e-6, atol=1e-8)
    loss, dloss = family.loss_and_dloss(y, eta, weight)
    assert loss == pytest.approx(float(weight @ family.pointwise_loss(y, eta)), rel=1e-12)
    np.testing.assert_allclose(dloss, family.dloss(y, eta, weight), rtol=1e-12, atol=0)


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_d2loss_is_the_fisher_weight(pair):
    # The observed second derivative is linear in y for these distributions, so its
    # expectation, the Fisher weight, is the finite difference of dloss with y = mu held at
    # the mean of the point; for the canonical link it is also the exact second derivative.
    distribution, link = pair
    family = Family(distribution, link)
    rng = np.random.default_rng(3)
    mu = _means(rng)
    eta = link.link(mu)
    weight = rng.uniform(0.5, 2.0, size=mu.size)
    h = 1e-6
    expected = (family.dloss(mu, eta + h, weight) - family.dloss(mu, eta - h, weight)) / (2 * h)
    np.testing.assert_allclose(family.d2loss(mu, eta, weight), expected, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(family.d2loss(None, eta, weight), weight * family.variance(eta),
                               rtol=1e-14, atol=0)
    assert np.all(family.d2loss(None, eta, weight) > 0)
    if family.canonical:
        y = _target(distribution, mu, rng)
        exact = (family.dloss(y, eta + h, weight) - family.dloss(y, eta - h, weight)) / (2 * h)
        np.testing.assert_allclose(family.d2loss(y, eta, weight), exact, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("fast", [Gaussian(), Binomial(), Poisson()], ids=repr)
def test_chain_rule_with_the_canonical_link_matches_the_closed_forms(fast):
    generic = Family(fast.distribution, fast.link)
    assert fast.canonical and generic.canonical
    rng = np.random.default_rng(4)
    mu = _means(rng)
    eta, y = fast.link.link(mu), _target(fast.distribution, mu, rng)
    np.testing.assert_allclose(generic.pointwise_loss(y, eta), fast.pointwise_loss(y, eta),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(generic.dloss(y, eta), fast.dloss(y, eta), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(generic.d2loss(y, eta), fast.d2loss(y, eta), rtol=1e-12, atol=0)
    np.testing.assert_allclose(generic.mean(eta), fast.mean(eta), rtol=1e-15, atol=0)


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_finite_for_extreme_linear_predictor(pair):
    family = Family(*pair)
    eta = np.array([-1e3, -700.0, -30.0, -1e-300, 0.0, 1e-300, 30.0, 700.0, 1e3])
    y = np.ones_like(eta)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        values = [family.loss(y, eta), family.dloss(y, eta), family.d2loss(y, eta),
                  family.loss_and_dloss(y, eta)[1]]
    for value in values:
        assert np.all(np.isfinite(value))
    assert np.all(family.d2loss(y, eta) >= 0)


def test_named_families_take_links_and_stay_equal_to_the_canonical_ones():
    assert Binomial() == Binomial(link="logit") == Binomial(Logit())
    assert Poisson() == Poisson("log") and Gaussian() == Gaussian(link=Identity())
    assert Binomial(link="probit") != Binomial()
    assert Binomial(link="probit").link == Probit() and not Binomial(link="probit").canonical
    assert hash(Binomial()) == hash(Binomial(link="logit"))
    assert Power(0.5) == Power(0.5) and Power(0.5) != Power(2.0)
    assert repr(Binomial()) == "Binomial()"
    assert repr(Binomial(link="probit")) == "Binomial(link=Probit())"
    for family in [Binomial(link="cloglog"), Poisson(link=Power(0.5)),
                   Family(GaussianDistribution(), "log")]:
        assert pickle.loads(pickle.dumps(family)) == family


def test_get_family_and_get_link():
    assert get_family("binomial", "probit") == Binomial(link="probit")
    assert get_family("logistic") == Binomial()
    assert get_family(Binomial(link="probit")) == Binomial(link="probit")
    assert get_family(Binomial(link="probit"), "cloglog") == Binomial(link="cloglog")
    assert get_family(PoissonDistribution(), "identity") == Family(PoissonDistribution(), Identity())
    assert get_link("PROBIT") == Probit()
    with pytest.raises(ValueError, match="Unknown link 'nope'.*cloglog.*probit"):
        get_link("nope")
    with pytest.raises(ValueError, match=r"Power\(p\)"):
        get_link("power")
    with pytest.raises(ValueError, match="log link"):
        Power(0)


def test_start_intercept():
    assert Binomial().start_intercept() == 0.0 and Poisson().start_intercept() == 0.0
    assert Poisson(link="identity").start_intercept() == 1.0  # a valid mean of 1
    assert Binomial(link="probit").start_intercept() == 0.0
    assert Gaussian(link="logit").start_intercept() == 0.0  # logit(1) is infinite


def test_normal_equations_need_the_identity_link():
    model = daskglm.GLM(family="gaussian", link="log", penalty="none", solver="normal")
    X = np.random.default_rng(5).normal(size=(20, 2))
    with pytest.raises(ValueError, match="squared error.*link.*'lbfgs'"):
        model.fit(X, np.exp(X[:, 0]))
    auto = daskglm.GLM(family="gaussian", link="log", penalty="none").fit(X, np.exp(X[:, 0]))
    assert auto.solver_ == "lbfgs"


# fits against statsmodels -------------------------------------------------------------


def _spector():
    sm = pytest.importorskip("statsmodels.api")
    data = sm.datasets.spector.load_pandas()
    X = data.exog[["GPA", "TUCE", "PSI"]].to_numpy(dtype=float)
    return sm, X, data.endog.to_numpy(dtype=float)


def _params(model):
    return np.r_[model.intercept_, model.coef_]


@pytest.mark.parametrize("solver", ["lbfgs", "newton"])
@pytest.mark.parametrize("link", ["probit", "cloglog"])
def test_binomial_links_match_statsmodels_on_spector(link, solver):
    sm, X, y = _spector()
    sm_link = {"probit": sm.families.links.Probit(), "cloglog": sm.families.links.CLogLog()}[link]
    reference = sm.GLM(y, sm.add_constant(X), family=sm.families.Binomial(link=sm_link)).fit(tol=1e-14)
    model = daskglm.GLM(family="binomial", link=link, penalty="none", solver=solver, tol=1e-10,
                        max_iter=1000).fit(X, y)
    assert model.converged_
    np.testing.assert_allclose(_params(model), reference.params, rtol=1e-6)
    np.testing.assert_allclose(model.predict(X), reference.predict(sm.add_constant(X)),
                               rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("solver", ["lbfgs", "newton"])
def test_gaussian_log_link_matches_statsmodels(solver):
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 3))
    y = np.exp(X @ [0.3, -0.2, 0.1] + 1.0) + rng.normal(scale=0.5, size=400)
    family = sm.families.Gaussian(link=sm.families.links.Log())
    reference = sm.GLM(y, sm.add_constant(X), family=family).fit(tol=1e-14)
    model = daskglm.GLM(family="gaussian", link="log", penalty="none", solver=solver, tol=1e-10,
                        max_iter=1000).fit(X, y)
    assert model.converged_
    np.testing.assert_allclose(_params(model), reference.params, rtol=1e-6)


@pytest.mark.parametrize("solver", ["lbfgs", "newton"])
@pytest.mark.parametrize("link", ["identity", "sqrt"])
def test_poisson_identity_and_sqrt_links_match_statsmodels(link, solver):
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(7)
    X = rng.uniform(0.0, 1.0, size=(400, 2))
    y = rng.poisson(2.0 + X @ [3.0, 1.5]).astype(float)
    ours, theirs = {"identity": ("identity", sm.families.links.Identity()),
                    "sqrt": (Power(0.5), sm.families.links.Sqrt())}[link]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' DomainWarning for these links
        family = sm.families.Poisson(link=theirs)
        reference = sm.GLM(y, sm.add_constant(X), family=family).fit(tol=1e-14)
    model = daskglm.GLM(family="poisson", link=ours, penalty="none", solver=solver, tol=1e-10,
                        max_iter=1000).fit(X, y)
    assert model.converged_
    np.testing.assert_allclose(_params(model), reference.params, rtol=1e-6)


# the estimator -------------------------------------------------------------------------


def test_unknown_link_is_rejected_before_any_work(monkeypatch):
    import daskglm.estimators.base as base  # where _GLMBase._engine looks make_engine up

    def no_engine(*args, **kwargs):
        raise AssertionError("an engine was built")

    monkeypatch.setattr(base, "make_engine", no_engine)
    X, y = np.ones((4, 1)), np.array([0.0, 1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="Unknown link 'nope'"):
        daskglm.GLM(family="binomial", link="nope").fit(X, y)
    assert daskglm.GLM(link="nope").get_params()["link"] == "nope"  # __init__ only stores


def test_check_estimator_with_a_link():
    results = check_estimator(daskglm.GLM("poisson", alpha=0.01, link="identity"), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert failed == []
