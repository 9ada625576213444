"""Prediction intervals (``get_prediction``) after ``inference=True``, equal to
statsmodels' GLM ``get_prediction(...).summary_frame()``: Gaussian, logistic, Poisson with
offset and exposure, Gamma; numpy, pandas (their index kept), Dask arrays and DataFrames
(lazy, chunking-independent) and formula fits."""

import warnings

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

import daskglm
from daskglm.model.families import Gamma

#: Relative tolerance against statsmodels (both fits to 1e-8 or better; the standard
#: errors are quadratic forms in the covariance of the parameters).
RTOL = 1e-6

MEAN_COLUMNS = ["mean", "mean_se", "mean_ci_lower", "mean_ci_upper"]
LINEAR_COLUMNS = ["predicted", "se", "ci_lower", "ci_upper"]


def _generated(family, n=1500, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 3.0, 0.2] + [0.0, 5.0, 0.0]
    eta = 0.3 + X @ [0.4, -0.1, 1.5]
    exposure = rng.uniform(0.5, 4.0, size=n)
    if family == "gaussian":
        y = eta + rng.normal(size=n)
    elif family == "binomial":
        y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    else:
        y = rng.poisson(exposure * np.exp(0.3 * eta)).astype(float)
    return X, y, exposure


def _fit(X, y, family, **kwargs):
    return daskglm.GLM(family=family, penalty=None, solver="newton", tol=1e-10, max_iter=200,
                       inference=True).fit(X, y, **kwargs)


def _reference(X, y, family, **kwargs):
    fit = {k: kwargs.pop(k) for k in ("cov_type", "use_t") if k in kwargs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sm.GLM(y, sm.add_constant(X), family=family, **kwargs).fit(tol=1e-13, **fit)


def _chunked(values, parts=4):
    rows = -(-len(values) // parts)
    return da.from_array(values, chunks=(rows,) + (-1,) * (values.ndim - 1))


def _assert_frame_like(ours, theirs, columns=MEAN_COLUMNS):
    assert list(ours.columns) == columns
    np.testing.assert_allclose(ours.to_numpy(), theirs.to_numpy(), rtol=RTOL)


@pytest.mark.parametrize("family, reference", [
    ("gaussian", sm.families.Gaussian()),
    ("binomial", sm.families.Binomial()),
], ids=["gaussian-identity", "logistic"])
def test_numpy_pandas_and_dask_rows_like_statsmodels(family, reference):
    X, y, _ = _generated(family)
    model = _fit(X, y, family)
    expected = _reference(X, y, reference).get_prediction(sm.add_constant(X[:200]))
    frame = expected.summary_frame()
    _assert_frame_like(model.get_prediction(X[:200]).summary_frame(), frame)
    labels = pd.Index([f"row{i}" for i in range(200)])
    table = pd.DataFrame(X[:200], index=labels)
    on_table = model.get_prediction(table).summary_frame()
    assert on_table.index.equals(labels)
    _assert_frame_like(on_table, frame)
    lazy = model.get_prediction(_chunked(X[:200])).summary_frame()
    assert isinstance(lazy, dd.DataFrame)
    _assert_frame_like(lazy.compute(), frame)
    for alpha in (0.01, 0.2):
        _assert_frame_like(model.get_prediction(X[:200]).summary_frame(alpha=alpha),
                           expected.summary_frame(alpha=alpha))


def test_logistic_regression_predictions_like_statsmodels():
    data = sm.datasets.spector.load()
    X, y = np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)
    model = daskglm.LogisticRegression(penalty=None, solver="newton", tol=1e-10,
                                       inference=True).fit(X, y)
    expected = _reference(X, y, sm.families.Binomial()).get_prediction(sm.add_constant(X))
    _assert_frame_like(model.get_prediction(X).summary_frame(), expected.summary_frame())
    ci = model.get_prediction(X).conf_int()
    assert ((ci > 0) & (ci < 1)).all()  # the link-scale interval, mapped: probabilities


@pytest.mark.parametrize("layout", ["numpy", "dask"])
def test_poisson_with_offset_and_exposure_like_statsmodels(layout):
    X, y, exposure = _generated("poisson")
    offset = np.log(exposure)
    fitted = _fit(*((_chunked(X), _chunked(y)) if layout == "dask" else (X, y)), "poisson",
                  exposure=_chunked(exposure) if layout == "dask" else exposure)
    reference = _reference(X, y, sm.families.Poisson(), exposure=exposure)
    rows = X[:300] if layout == "numpy" else _chunked(X[:300], 3)
    new_exposure = exposure[::-1][:300].copy()
    for ours, theirs in [
        (fitted.get_prediction(rows, exposure=new_exposure),
         reference.get_prediction(sm.add_constant(X[:300]), exposure=new_exposure)),
        (fitted.get_prediction(rows, offset=np.log(new_exposure)),
         reference.get_prediction(sm.add_constant(X[:300]), offset=np.log(new_exposure))),
        (fitted.get_prediction(rows),
         reference.get_prediction(sm.add_constant(X[:300]), offset=np.zeros(300))),
    ]:
        frame = ours.summary_frame()
        _assert_frame_like(frame.compute() if layout == "dask" else frame,
                           theirs.summary_frame())
    assert offset[0] == np.log(exposure[0])  # inputs untouched
    dask_offset = _chunked(np.log(new_exposure), 5)  # chunked unlike the rows
    lazy = fitted.get_prediction(_chunked(X[:300], 3), offset=dask_offset).summary_frame()
    theirs = reference.get_prediction(sm.add_constant(X[:300]), offset=np.log(new_exposure))
    _assert_frame_like(lazy.compute(), theirs.summary_frame())


def test_link_scale_predictions_like_statsmodels_which_linear():
    X, y, exposure = _generated("poisson")
    model = _fit(X, y, "poisson", exposure=exposure)
    reference = _reference(X, y, sm.families.Poisson(), exposure=exposure)
    theirs = reference.get_prediction(sm.add_constant(X[:100]), which="linear",
                                      offset=np.zeros(100))
    ours = model.get_prediction(X[:100])
    _assert_frame_like(ours.summary_frame(which="linear"), theirs.summary_frame(),
                       LINEAR_COLUMNS)
    np.testing.assert_allclose(ours.predicted_linear, theirs.predicted, rtol=RTOL)
    np.testing.assert_allclose(ours.se_linear, theirs.se, rtol=RTOL)
    np.testing.assert_allclose(ours.conf_int(which="linear"), theirs.conf_int(), rtol=RTOL)
    np.testing.assert_allclose(ours.predicted_mean, model.predict(X[:100]), rtol=1e-12)


@pytest.mark.parametrize("kind, cov_type", [("model", "nonrobust"), ("HC0", "HC0")])
@pytest.mark.parametrize("use_t", [False, True])
def test_covariance_kinds_and_t_quantiles_like_statsmodels(kind, cov_type, use_t):
    X, y, _ = _generated("binomial")
    model = _fit(X, y, "binomial")
    reference = _reference(X, y, sm.families.Binomial(), cov_type=cov_type, use_t=use_t)
    ours = model.get_prediction(X[:100], kind=kind, use_t=use_t).summary_frame()
    _assert_frame_like(ours, reference.get_prediction(sm.add_constant(X[:100]))
                       .summary_frame())


def test_gamma_with_the_inverse_link_orders_the_interval():
    data = sm.datasets.scotland.load()
    X, y = np.asarray(data.exog, dtype=float), np.asarray(data.endog, dtype=float)
    model = daskglm.GLM(family=Gamma(), penalty=None, solver="newton", tol=1e-8, max_iter=200,
                        inference=True).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # statsmodels' inverse link
        theirs = _reference(X, y, sm.families.Gamma()).get_prediction(sm.add_constant(X))
        theirs = theirs.summary_frame()
    ours = model.get_prediction(X).summary_frame()
    _assert_frame_like(ours[["mean", "mean_se"]], theirs[["mean", "mean_se"]],
                       ["mean", "mean_se"])
    # a decreasing inverse link: statsmodels leaves the mapped ends reversed
    np.testing.assert_allclose(ours["mean_ci_lower"], theirs["mean_ci_upper"], rtol=RTOL)
    np.testing.assert_allclose(ours["mean_ci_upper"], theirs["mean_ci_lower"], rtol=RTOL)
    assert (ours["mean_ci_lower"] < ours["mean"]).all()


@pytest.mark.parametrize("layout", ["pandas", "dask"])
def test_formula_fit_predictions_of_a_table_like_statsmodels(layout):
    data = sm.datasets.fair.load_pandas().data
    formula = "affairs ~ rate_marriage + np.log(age) + C(occupation)"
    data = data.set_index(data.index * 10)
    table = data if layout == "pandas" else dd.from_pandas(data, npartitions=3)
    model = daskglm.GLM.from_formula(formula, table, family="poisson", penalty=None,
                                     tol=1e-10, inference=True)
    reference = smf.glm(formula, data, family=sm.families.Poisson()).fit(tol=1e-13)
    rows = data.iloc[::7]
    new = rows if layout == "pandas" else dd.from_pandas(rows, npartitions=4)
    ours = model.get_prediction(new).summary_frame()
    if layout == "dask":
        assert isinstance(ours, dd.DataFrame) and ours.npartitions == 4
        ours = ours.compute()
    assert ours.index.equals(rows.index)
    _assert_frame_like(ours, reference.get_prediction(rows).summary_frame())


def test_dask_rows_are_lazy_and_their_results_do_not_depend_on_the_chunking():
    X, y, exposure = _generated("poisson")
    model = _fit(X, y, "poisson", exposure=exposure)

    def refuse(*args, **kwargs):
        raise AssertionError("get_prediction computed something")

    with dask.config.set(scheduler=refuse):
        prediction = model.get_prediction(_chunked(X, 3), exposure=_chunked(exposure, 3))
        frame = prediction.summary_frame()
        ci = prediction.conf_int()
    assert isinstance(prediction.predicted_mean, da.Array)
    assert isinstance(ci, da.Array) and ci.chunks[0] == _chunked(X, 3).chunks[0]
    other = model.get_prediction(_chunked(X, 7), exposure=exposure).summary_frame()
    np.testing.assert_allclose(frame.compute().to_numpy(), other.compute().to_numpy(),
                               rtol=1e-13)
    in_memory = model.get_prediction(X, exposure=exposure).summary_frame()
    np.testing.assert_allclose(frame.compute().to_numpy(), in_memory.to_numpy(), rtol=1e-13)


def _refuse(*args, **kwargs):
    raise AssertionError("get_prediction computed something")


def test_dask_dataframe_rows_are_lazy_like_statsmodels():
    """A Dask DataFrame's rows (their partitions' lengths unknown) with an offset in
    memory, as a Dask Series of the same partitions, or as a Dask array chunked
    otherwise: nothing computed until asked for; Dask arrays and a Dask DataFrame indexed
    as the rows, equal to statsmodels'."""
    X, y, exposure = _generated("poisson")
    names = ["a", "b", "c"]
    model = _fit(pd.DataFrame(X, columns=names), y, "poisson", exposure=exposure)
    reference = _reference(X, y, sm.families.Poisson(), exposure=exposure)
    rows = pd.DataFrame(X[:300], columns=names, index=np.arange(300) * 3)
    offset = np.log(exposure[:300])
    frame = dd.from_pandas(rows.assign(offset=offset), npartitions=4)
    theirs = reference.get_prediction(sm.add_constant(X[:300]), offset=offset)
    for given in (offset, frame["offset"], da.from_array(offset, chunks=70)):
        with dask.config.set(scheduler=_refuse):
            prediction = model.get_prediction(frame[names], offset=given)
            table = prediction.summary_frame()
            ci, mean, se = prediction.conf_int(), prediction.predicted_mean, prediction.se_mean
        assert isinstance(table, dd.DataFrame) and table.npartitions == 4
        assert all(isinstance(a, da.Array) for a in (ci, mean, se))
        computed = table.compute()
        assert computed.index.equals(rows.index)
        _assert_frame_like(computed, theirs.summary_frame())
        np.testing.assert_allclose(ci.compute(), theirs.conf_int(), rtol=RTOL)
        np.testing.assert_allclose(mean.compute(), theirs.predicted_mean, rtol=RTOL)
        np.testing.assert_allclose(se.compute(), theirs.se_mean, rtol=RTOL)
    with dask.config.set(scheduler=_refuse):
        short = model.get_prediction(frame[names], offset=offset[:-1]).summary_frame()
    with pytest.raises(ValueError, match="offset has 299 rows"):
        short.compute()


def test_tables_with_categories_give_lazy_predictions():
    """A table fitted with a categorical column, and a formula: a Dask DataFrame of new
    rows encoded partition by partition where they live, nothing computed before."""
    data = sm.datasets.fair.load_pandas().data
    data = data.assign(occupation=data["occupation"].astype(int).astype(str))
    columns = ["rate_marriage", "age", "occupation"]
    fitted = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10, inference=True).fit(
        data[columns], data["affairs"])
    formula = daskglm.GLM.from_formula("affairs ~ rate_marriage + np.log(age) + C(occupation)",
                                       data, family="poisson", penalty=None, tol=1e-10,
                                       inference=True)
    rows = data.iloc[::5]
    for model, new in ((fitted, rows[columns]), (formula, rows)):
        with dask.config.set(scheduler=_refuse):
            lazy = model.get_prediction(dd.from_pandas(new, npartitions=3)).summary_frame()
        _assert_frame_like(lazy.compute(), model.get_prediction(new).summary_frame())


def test_dask_rows_on_a_cluster(client):
    X, y, _ = _generated("gaussian")
    model = _fit(_chunked(X), _chunked(y), "gaussian")
    reference = _reference(X, y, sm.families.Gaussian()).get_prediction(sm.add_constant(X))
    frame = client.compute(model.get_prediction(_chunked(X, 5)).summary_frame()).result()
    _assert_frame_like(frame, reference.summary_frame())


def test_get_prediction_refuses_bad_input_before_any_work():
    X, y, _ = _generated("gaussian")
    plain = daskglm.GLM(family="gaussian", penalty=None).fit(X, y)
    with pytest.raises(ValueError, match="inference=True"):
        plain.get_prediction(X)
    model = _fit(X, y, "gaussian")
    with pytest.raises(ValueError, match="kind must be one of"):
        model.get_prediction(X, kind="HC9")
    with pytest.raises(ValueError, match="offset.shape"):
        model.get_prediction(X, offset=np.zeros(3))
    with pytest.raises(ValueError, match="exposure needs a log link"):
        model.get_prediction(X, exposure=np.ones(len(X)))
    with pytest.raises(ValueError, match="use_t"):
        model.get_prediction(X, use_t="no")
    with pytest.raises(ValueError, match="features"):
        model.get_prediction(X[:, :2])
    prediction = model.get_prediction(X[:10])
    with pytest.raises(ValueError, match="alpha"):
        prediction.summary_frame(alpha=1.5)
    with pytest.raises(ValueError, match="which"):
        prediction.summary_frame(which="response")
