"""Tables with categorical and string columns (:mod:`daskglm.estimators.categorical`),
against the same models fitted on dummies made by hand."""

import time
import uuid

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from sklearn.linear_model import LogisticRegression as SkLogistic

import daskglm
from daskglm.accounting.kinds import Kind
from tests.conftest import keys_held


def _table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "west"], size=n)
    plan = rng.choice(["basic", "gold"], size=n)
    age = rng.uniform(18, 80, size=n)
    eta = -1.0 + 0.01 * age + np.select([region == "south", region == "west"], [0.4, -0.3], 0.0) \
        + 0.5 * (plan == "gold")
    frame = pd.DataFrame({"age": age, "region": pd.Categorical(region), "plan": plan})
    return frame, eta, rng


def _dummies(frame, drop_first):
    return pd.get_dummies(frame, columns=["region", "plan"], drop_first=drop_first,
                          dtype=float).to_numpy()


@pytest.mark.parametrize("as_dask", [False, True], ids=["pandas", "dask"])
def test_unpenalised_poisson_drops_each_reference_level_as_statsmodels(as_dask):
    frame, eta, rng = _table()
    y = rng.poisson(np.exp(eta)).astype(float)
    X = dd.from_pandas(frame, npartitions=4) if as_dask else frame
    model = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10).fit(X, y)
    reference = sm.GLM(y, sm.add_constant(_dummies(frame, True)),
                       family=sm.families.Poisson()).fit(tol=1e-12)
    np.testing.assert_allclose(model.intercept_, reference.params[0], rtol=1e-7)
    np.testing.assert_allclose(model.coef_, reference.params[1:], rtol=1e-7, atol=1e-9)
    assert list(model.feature_names_out_) == ["age", "region[south]", "region[west]",
                                              "plan[gold]"]
    assert list(model.feature_names_in_) == ["age", "region", "plan"]
    assert model.n_features_in_ == 3
    # the table was read once, kept as read: a partition per thread, then the others
    # (their size times the partitions fits in memory), levels and rows found there
    if as_dask:
        assert model.comm_.count(Kind.DRIVER_PASS) == 2
    prediction = model.predict(X)
    expected = reference.predict(sm.add_constant(_dummies(frame, True)))
    np.testing.assert_allclose(np.asarray(prediction), expected, rtol=1e-7)


def test_penalised_logistic_keeps_every_level_as_scikit_learn_on_all_dummies():
    frame, eta, rng = _table()
    y = (rng.uniform(size=len(frame)) < 1 / (1 + np.exp(-eta))).astype(int)
    model = daskglm.LogisticRegression(C=0.5, tol=1e-10).fit(dd.from_pandas(frame, 3), y)
    reference = SkLogistic(C=0.5, tol=1e-12, max_iter=10_000).fit(_dummies(frame, False), y)
    assert list(model.feature_names_out_) == ["age", "region[north]", "region[south]",
                                              "region[west]", "plan[basic]", "plan[gold]"]
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=1e-5, atol=1e-6)


def test_an_unseen_level_counts_as_the_reference_and_a_missing_one_is_an_error():
    frame, eta, rng = _table(n=600)
    y = rng.poisson(np.exp(eta)).astype(float)
    model = daskglm.PoissonRegressor(alpha=0.0).fit(frame, y)
    new = frame.head(3).copy()
    new["region"] = pd.Categorical(["east", "north", "east"])
    reference = new.copy()
    reference["region"] = pd.Categorical(["north"] * 3, categories=["north", "south", "west"])
    np.testing.assert_allclose(model.predict(new), model.predict(reference))
    missing = frame.copy()
    missing.loc[5, "plan"] = None
    with pytest.raises(ValueError, match="'plan' has missing values"):
        daskglm.PoissonRegressor(alpha=0.0).fit(missing, y)


def test_the_summary_names_each_level():
    frame, eta, rng = _table(n=2000)
    y = rng.poisson(np.exp(eta)).astype(float)
    model = daskglm.PoissonRegressor(alpha=0.0, inference=True).fit(frame, y)
    text = str(model.summary())
    assert "region[south]" in text and "plan[gold]" in text


@pytest.mark.parametrize("drop_first", [False, True])
@pytest.mark.parametrize("region_as", ["category", "strings", "category in another order"])
def test_a_partition_is_encoded_as_its_dummies(drop_first, region_as):
    """``encode_frame`` is the dummies made by hand, row by row: numeric values (zeros not
    stored), one 1 per categorical column, sorted column indices; the levels matched on a
    category's own categories (whatever their order) or a column's distinct values;
    missing values the "(missing)" level, unseen levels no column."""
    from daskglm.estimators.categorical import MISSING_LEVEL, encode_frame, table_encoding

    frame, _, rng = _table(n=500)
    frame.loc[:9, "age"] = 0.0
    frame.loc[rng.uniform(size=500) < 0.1, "age"] = np.nan
    frame["plan"] = frame.plan.astype(object)
    frame.loc[rng.uniform(size=500) < 0.1, "plan"] = None
    encoding = table_encoding(frame, drop_first=drop_first, missing="mean")
    new = frame.copy()
    regions = np.where(np.arange(500) % 50 == 0, "east", new.region.astype(str))
    new["region"] = {"category": pd.Categorical(regions),
                     "strings": regions.astype(object),
                     "category in another order": pd.Categorical(
                         regions, categories=["west", "east", "south", "north"])}[region_as]
    matrix = encode_frame(new, encoding)
    filled = new.assign(age=new.age.fillna(encoding.means["age"]),
                        plan=new.plan.fillna(MISSING_LEVEL))
    expected = [filled.age.to_numpy()]
    for column in ("region", "plan"):
        for level in encoding.kept_levels(column):
            expected.append((filled[column].astype(object) == level).to_numpy(dtype=float))
    np.testing.assert_array_equal(matrix.toarray(), np.column_stack(expected))
    assert matrix.has_sorted_indices and np.all(np.diff(matrix.indices.astype(np.int64))[
        np.diff(np.repeat(np.arange(500), np.diff(matrix.indptr))) == 0] > 0)
    assert np.all(matrix.data != 0) and matrix.nnz == (filled.age != 0).sum() + (
        new.region.astype(str) != "east").sum() - drop_first * (
        (new.region.astype(str) == "north").sum() + (filled.plan == "basic").sum()) + 500


@pytest.mark.parametrize("missing", ["error", "mean"])
def test_the_table_pass_reads_only_the_columns_it_needs(tmp_path, monkeypatch, missing):
    """On a parquet table not kept in memory, the pass before the fit reads the string
    columns whose levels it must find (and, with ``missing="mean"``, the columns of the
    means and gaps), with every partition's rows: the encoded array's chunk sizes."""
    from daskglm.estimators import categorical

    frame, _, rng = _table(4000)
    frame["income"] = rng.normal(size=len(frame))
    dd.from_pandas(frame, npartitions=5).to_parquet(tmp_path / "table")
    ddf = dd.read_parquet(tmp_path / "table")
    seen = []
    summary = categorical._summary

    def recording(part, *args):
        seen.append(list(part.columns))
        return summary(part, *args)

    monkeypatch.setattr(categorical, "_summary", recording)
    encoding, lengths = categorical.table_encoding(ddf, drop_first=True, missing=missing,
                                                   with_lengths=True,
                                                   compute=lambda *c: dask.compute(
                                                       *c, scheduler="sync"))
    unknown = [c for c in categorical.categorical_columns(ddf)
               if categorical.known_levels(ddf[c]) is None]
    expected = list(ddf.columns) if missing == "mean" else unknown
    assert unknown and seen == [expected] * 5
    assert lengths == [len(part.compute()) for part in ddf.to_delayed()]
    assert sum(lengths) == len(frame)
    assert list(encoding.levels["plan"]) == ["basic", "gold"]
    X = categorical.encoded_array(ddf, encoding, lengths=lengths).compute()
    np.testing.assert_array_equal(X.toarray(), categorical.encode_frame(frame, encoding)
                                  .toarray())


@pytest.mark.parametrize("estimator", ["poisson", "logistic"])
def test_score_takes_a_dask_table(estimator):
    """``score(ddf[features], ddf.y)`` on a Dask table with category and string columns
    (it was made an array of objects, which predict refused): the pandas frame's score
    (1e-12), the target chunked like the table's partitions (whose rows differ)."""
    frame, eta, rng = _table(3001)
    if estimator == "poisson":
        y = pd.Series(rng.poisson(np.exp(eta)).astype(float), name="y")
        model = daskglm.PoissonRegressor(alpha=1e-3, tol=1e-10)
    else:
        y = pd.Series(np.where(rng.uniform(size=len(frame)) < 0.5, "yes", "no"), name="y")
        model = daskglm.LogisticRegression(tol=1e-10)
    table = dd.from_pandas(frame.assign(y=y), npartitions=4)
    model.fit(table[["age", "region", "plan"]], table["y"])
    expected = model.score(frame, y)
    got = model.score(table[["age", "region", "plan"]], table["y"])
    assert float(got) == pytest.approx(expected, rel=1e-12)


def _counted_table(frame, directory, npartitions=4):
    """A Dask table of ``frame``'s rows whose every partition read leaves a file in
    ``directory`` (so reads in worker processes are counted too)."""
    bounds = np.linspace(0, len(frame), npartitions + 1).astype(int)

    def load(index):
        (directory / f"{index}-{uuid.uuid4().hex}").touch()
        return frame.iloc[bounds[index]:bounds[index + 1]]

    return dd.from_map(load, range(npartitions), meta=frame.iloc[:0],
                       enforce_metadata=False)


def _reads(directory):
    counts = {}
    for path in directory.iterdir():
        index = int(path.name.split("-")[0])
        counts[index] = counts.get(index, 0) + 1
        path.unlink()
    return counts


@pytest.mark.parametrize("where", ["in process", "cluster"])
def test_a_table_is_read_once_and_its_levels_found_in_that_read(request, tmp_path, where):
    """With the default cache, each partition of a table is read once: the levels, rows
    and means come from that read, kept where it was made, and the validation round
    encodes the kept reads.  The fit equals, to the bit, the fit that reads the table
    again in every round (``cache="none"``), and the fit on the pandas table (one
    partition: 1e-8, the solver's tolerance).  On the cluster, the kept reads are
    released when the fit ends."""
    client = request.getfixturevalue("client") if where == "cluster" else None
    frame, eta, rng = _table(4000)
    frame["plan"] = frame["plan"].where(np.arange(len(frame)) % 13 != 0)  # a missing level
    frame.loc[frame.index[::17], "age"] = np.nan
    y = rng.poisson(np.exp(np.nan_to_num(eta))).astype(float)
    table = _counted_table(frame, tmp_path)

    def fit(cache):
        return daskglm.PoissonRegressor(alpha=0.0, tol=1e-10, missing="mean",
                                        cache=cache).fit(table, y)

    once = fit("auto")
    assert _reads(tmp_path) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert once.comm_.count(Kind.DRIVER_PASS) == 2  # a partition per thread, the others
    assert "plan[(missing)]" in list(once.feature_names_out_)
    if client is not None:
        deadline = time.monotonic() + 10
        while any("read_partition" in str(key) for key in keys_held(client)):
            assert time.monotonic() < deadline, "the kept reads outlived the fit"
            time.sleep(0.05)
    again = fit("none")
    assert all(count >= 3 for count in _reads(tmp_path).values())
    np.testing.assert_array_equal(once.coef_, again.coef_)
    assert once.intercept_ == again.intercept_
    in_memory = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10, missing="mean").fit(frame, y)
    np.testing.assert_allclose(once.coef_, in_memory.coef_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(once.predict(frame), in_memory.predict(frame), rtol=1e-8)


def test_a_table_too_large_to_keep_finds_its_levels_on_the_columns_they_need(
        tmp_path, monkeypatch):
    """When the first partitions' reads, times the partitions, would not fit in memory,
    the others are not kept: the levels are found by a pass over the string column alone
    (a parquet table reads no other), and the fit reads the table again."""
    from daskglm.engine import cache
    from daskglm.estimators import categorical

    frame, eta, rng = _table(4000)
    y = rng.poisson(np.exp(eta)).astype(float)
    expected = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10).fit(frame, y)
    table = _counted_table(frame, tmp_path)
    for module in (cache, categorical):
        monkeypatch.setattr(module, "free_memory", lambda client: 10_000)
    model = daskglm.PoissonRegressor(alpha=0.0, tol=1e-10).fit(table, y)
    assert model.cache_ == "none"
    reads = _reads(tmp_path)
    assert reads[0] >= 3 and all(count >= 2 for count in reads.values())
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("as_dask", [False, True], ids=["pandas", "dask"])
def test_a_missing_level_is_an_error_of_the_table_pass(as_dask):
    """A category column's missing value, with ``missing="error"``, is found by the pass
    that finds the levels: an error naming the column before the validation round."""
    frame, eta, rng = _table(n=600)
    frame["region"] = frame["region"].where(np.arange(600) != 400)
    y = rng.poisson(np.exp(eta)).astype(float)
    X = dd.from_pandas(frame, npartitions=3) if as_dask else frame
    model = daskglm.PoissonRegressor(alpha=0.0)
    with pytest.raises(ValueError, match="'region' has missing values"):
        model.fit(X, y)
    assert not hasattr(model, "comm_")


def test_the_coefficient_table_names_each_level_with_its_statistics():
    """``coef_table_``: the intercept then ``column[level]`` rows, the coefficients and,
    with ``inference=True``, statsmodels' standard errors, z, p-values and intervals as
    ``summary()`` gives them; one column per class for a multinomial model."""
    frame, eta, rng = _table()
    y = rng.poisson(np.exp(eta)).astype(float)
    model = daskglm.PoissonRegressor(alpha=0.0, inference=True, tol=1e-10).fit(
        dd.from_pandas(frame, npartitions=3), y)
    table = model.coef_table_
    assert list(table.index) == ["intercept", "age", "region[south]", "region[west]",
                                 "plan[gold]"] == model.param_names_
    np.testing.assert_array_equal(table.coef, model.params_)
    np.testing.assert_array_equal(table.std_err, model.bse_)
    np.testing.assert_array_equal(table.p_value, model.pvalues_)
    np.testing.assert_array_equal(table[["ci_lower", "ci_upper"]], model.conf_int())
    reference = sm.GLM(y, sm.add_constant(_dummies(frame, True)),
                       family=sm.families.Poisson()).fit(tol=1e-12)
    np.testing.assert_allclose(table.std_err, reference.bse, rtol=1e-6)
    plain = daskglm.PoissonRegressor(alpha=1e-3).fit(frame, y).coef_table_
    assert list(plain.columns) == ["coef"] and plain.index[1:].tolist() == [
        "age", "region[north]", "region[south]", "region[west]", "plan[basic]", "plan[gold]"]
    labels = np.array(["a", "b", "c"])[rng.integers(0, 3, len(frame))]
    multinomial = daskglm.LogisticRegression().fit(frame, labels).coef_table_
    assert list(multinomial.columns) == ["a", "b", "c"] and multinomial.shape == (7, 3)
    binary = daskglm.LogisticRegression().fit(frame, labels == "a")
    np.testing.assert_array_equal(binary.coef_table_.coef,
                                  np.concatenate([binary.intercept_, binary.coef_[0]]))
    # scikit-learn's HTML display of a fitted estimator reads its fitted attributes
    from sklearn.utils import estimator_html_repr

    assert "LogisticRegression" in estimator_html_repr(binary)
    with pytest.raises(Exception, match="not fitted"):
        _ = daskglm.PoissonRegressor().coef_table_
