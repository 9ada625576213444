"""Passes over Dask inputs that estimators compute themselves reach the fit's ledger."""

import dask.array as da
import numpy as np

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.engine.driver_passes import collecting, compute_pass
from tests.conftest import make_data


def test_string_labels_cost_one_driver_pass_in_the_ledger():
    X, y, _ = make_data("binomial", n=2000)
    labels = np.where(y > 0, "yes", "no")
    Xd, yd = da.from_array(X, chunks=(500, -1)), da.from_array(labels, chunks=500)
    model = daskglm.LogisticRegression().fit(Xd, yd)
    first = model.comm_.records[0]
    assert first.kind == Kind.DRIVER_PASS and model.comm_.count(Kind.DRIVER_PASS) == 1
    assert first.bytes_read == yd.nbytes and first.bytes_measured is None
    assert first.seconds > 0 and first.tasks > 0
    np.testing.assert_array_equal(model.classes_, ["no", "yes"])
    assert "driver_pass" in repr(model.comm_)
    # numeric labels: the classes come from the engine's validation round, no extra pass
    numeric = daskglm.LogisticRegression().fit(Xd, da.from_array(y, chunks=500))
    assert numeric.comm_.count(Kind.DRIVER_PASS) == 0


def test_a_stratified_split_of_dask_labels_is_a_driver_pass():
    X, y, _ = make_data("binomial", n=1200)
    Xd, yd = da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    model = daskglm.LogisticRegressionCV(Cs=2, cv=3).fit(Xd, yd)
    assert model.comm_.records[0].kind == Kind.DRIVER_PASS


def test_passes_outside_a_fit_are_computed_and_not_recorded():
    assert compute_pass(da.ones(10, chunks=5).sum())[0] == 10
    with collecting() as passes:
        compute_pass(da.ones(10, chunks=5).sum())
    assert len(passes) == 1 and passes[0].partitions == 1


def test_rows_counted_after_boolean_indexing_are_a_driver_pass():
    """Cross-validation needs the rows of each chunk before the engine exists: counted in
    one pass over X and one over y, both in the ledger, and the fit is that of the same
    rows with known chunks."""
    X, y, _ = make_data("gaussian", n=1200)
    Xd, yd = da.from_array(X, chunks=(300, -1)), da.from_array(y, chunks=300)
    keep = da.from_array(np.arange(1200) % 5 != 0, chunks=300)
    model = daskglm.LassoCV(alphas=3, cv=3).fit(Xd[keep], yd[keep])
    counted = [r for r in model.comm_.records if r.kind == Kind.DRIVER_PASS]
    assert len(counted) == 2 and all(r.tasks > 0 and r.seconds > 0 for r in counted)
    assert model.comm_.records[0].kind == Kind.DRIVER_PASS
    expected = daskglm.LassoCV(alphas=3, cv=3).fit(X[np.arange(1200) % 5 != 0],
                                                     y[np.arange(1200) % 5 != 0])
    np.testing.assert_allclose(model.coef_, expected.coef_, rtol=1e-8, atol=1e-10)


def test_with_known_rows_counts_each_chunk():
    from daskglm.engine.driver_passes import with_known_rows

    a = da.arange(20, chunks=6)
    picked = a[a % 3 != 0]
    with collecting() as passes:
        known = with_known_rows(picked)
    assert known.chunks == ((4, 4, 4, 1),) and len(passes) == 1
    np.testing.assert_array_equal(known.compute(), picked.compute())
    assert with_known_rows(a) is a
