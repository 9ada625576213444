"""``score`` and ``predict`` on the Dask DataFrame a model was fitted on (no names warning),
``score`` of a one-column fit (no broadcasting into a square), columns near the float
maximum (never a silent NaN), and the class-count pass of SGDClassifier in its ledger."""

import warnings

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import sklearn.linear_model as slm
from sklearn.metrics import r2_score

import daskglm


def _table(n=400, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["y"] = 1 + frame.a - 2 * frame.b + rng.normal(size=n)
    frame["label"] = (frame.y > 1).astype(int)
    return frame


@pytest.mark.parametrize("estimator, target", [
    (daskglm.LinearRegression(), "y"), (daskglm.Ridge(), "y"),
    (daskglm.LogisticRegression(), "label"), (daskglm.PoissonRegressor(), "label"),
    (daskglm.SGDRegressor(random_state=0), "y"),
    (daskglm.SGDClassifier(random_state=0), "label"),
])
def test_score_on_the_fitted_dask_frame_warns_of_nothing(estimator, target):
    table = dd.from_pandas(_table(), npartitions=4)
    X, y = table[["a", "b", "c"]], table[target]
    model = estimator.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.asarray(model.predict(X))
        model.score(X, y)
        model.score(X, _table()[target])
    # an array the user made of the frame has no names: scikit-learn's warning stays
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        model.predict(X.to_dask_array(lengths=True))


@pytest.mark.parametrize("kind", ["numpy", "pandas", "dask"])
def test_a_one_column_fit_scores_a_vector_target_as_scikit_learn(kind):
    frame = _table()
    X, y = frame[["a", "b", "c"]].to_numpy(), frame.y.to_numpy()
    model = daskglm.LinearRegression().fit(X, y[:, None])
    expected = r2_score(y, model.predict(X))
    targets = {"numpy": (X, y), "pandas": (frame[["a", "b", "c"]], frame.y),
               "dask": (da.from_array(X, chunks=100), da.from_array(y, chunks=100))}
    features, target = targets[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # pandas X on a model fitted on numpy
        assert model.score(features, target) == pytest.approx(expected, rel=1e-12)
    column = target.to_frame() if kind == "pandas" else target[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert model.score(features, column) == pytest.approx(expected, rel=1e-12)
    # dask-ml's test_lr_score: a perfect fit of a one-column target
    ramp = da.from_array(np.arange(1000.0).reshape(1000, 1), chunks=250)
    assert daskglm.LinearRegression().fit(ramp, ramp).score(ramp, ramp) == pytest.approx(1.0)


@pytest.mark.parametrize("estimator", [daskglm.LinearRegression(),
                                       daskglm.LinearRegression(solver="lbfgs", tol=1e-10),
                                       daskglm.Ridge(alpha=0.0)])
@pytest.mark.parametrize("as_dask", [False, True])
def test_columns_near_the_float_maximum_give_the_least_squares_fit(estimator, as_dask):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.7, 1.7, size=(200, 2)) * 1e308
    y = rng.normal(size=200)
    reference = slm.LinearRegression().fit(X / 1e308, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow of X's squares
        model = estimator.fit(da.from_array(X, chunks=50) if as_dask else X, y)
    assert model.converged_ and np.isfinite(model.intercept_)
    # the normal equations to rounding, L-BFGS to its gradient tolerance: 1e-6 relative
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=1e-6)
    np.testing.assert_allclose(model.coef_ * 1e308, reference.coef_, rtol=1e-6)


def test_a_penalised_fit_of_columns_near_the_float_maximum_is_refused():
    X = np.random.default_rng(1).uniform(1, 1.7, size=(50, 1)) * 1e308
    with pytest.raises(ValueError, match="too large or too small"):
        daskglm.Ridge(alpha=1.0).fit(X, np.ones(50))


def test_sgd_classifier_counts_its_classes_in_a_pass_of_its_ledger():
    frame = _table()
    X = da.from_array(frame[["a", "b", "c"]].to_numpy(), chunks=100)
    labels = da.from_array(np.where(frame.label == 1, "yes", "no"), chunks=100)
    model = daskglm.SGDClassifier(random_state=0, max_iter=5, tol=None,
                                  class_weight="balanced").fit(X, labels)
    passes = [r for r in model.comm_.records if str(r.kind) == "driver_pass"]
    # the labels' encoding and the classes' counts: each reads the labels once
    assert len(passes) == 2
    assert all(r.bytes_read == labels.nbytes for r in passes)
