"""scikit-learn conventions that scikit-learn's own linear-model tests rely on (see compat/).

Each test asserts the behaviour directly, against scikit-learn's estimator where it is a
number.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn import linear_model as sk

import daskglm


def test_ridge_alpha_per_target_matches_scikit_learn():
    # scikit-learn's Ridge takes one alpha per target for a 2-D y
    rng = np.random.RandomState(42)
    X, Y = rng.randn(20, 10), rng.randn(20, 5)
    alphas = np.arange(5.0)
    ours = daskglm.Ridge(alpha=alphas).fit(X, Y)
    theirs = sk.Ridge(alpha=alphas).fit(X, Y)
    assert ours.coef_.shape == (5, 10)
    assert_allclose(ours.coef_, theirs.coef_, rtol=1e-8, atol=1e-10)
    assert_allclose(ours.intercept_, theirs.intercept_, rtol=1e-8, atol=1e-10)
    for j, alpha in enumerate(alphas):
        single = daskglm.Ridge(alpha=alpha).fit(X, Y[:, j])
        assert_allclose(ours.coef_[j], single.coef_, rtol=1e-10, atol=1e-12)


def test_ridge_alpha_per_target_length_must_match():
    rng = np.random.RandomState(0)
    X, Y = rng.randn(20, 4), rng.randn(20, 5)
    with pytest.raises(ValueError, match="Number of targets and number of penalties do not "
                                         "correspond: 4 != 5"):
        daskglm.Ridge(alpha=np.arange(4.0)).fit(X, Y)


@pytest.mark.parametrize("Estimator", [daskglm.Lasso, daskglm.ElasticNet])
@pytest.mark.parametrize("check_input", [True, False])
def test_lasso_and_elastic_net_fit_take_check_input(Estimator, check_input):
    # scikit-learn's Lasso.fit and ElasticNet.fit take check_input; the fit is the same
    rng = np.random.RandomState(0)
    X = np.asfortranarray(rng.randn(30, 4))
    y = X @ np.array([1.0, -2.0, 0.0, 0.5]) + 0.1 * rng.randn(30)
    original = X.copy()
    fitted = Estimator(alpha=0.05, tol=1e-8).fit(X, y, check_input=check_input)
    reference = Estimator(alpha=0.05, tol=1e-8).fit(X, y)
    assert_allclose(fitted.coef_, reference.coef_, rtol=0, atol=0)
    assert_allclose(X, original, rtol=0, atol=0)  # the data is never modified in place
