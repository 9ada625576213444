"""Class labels found, counted and encoded by the engine (no pass over ``y`` of their own).

The validation round returns the distinct labels with their weighted counts (and, with
class weights, each class's column moments); one ``encode`` round encodes the labels and
weighs the rows by class where they live.  Checked here: the kernels against numpy, the
engine's totals against the same weights given as ``sample_weight`` (1e-12), the fitted
models against the same fit with the class weights passed as sample weights (1e-10: the
same rounds on the same partitions) and against scikit-learn (classes and weights
exactly, coefficients at the tolerance of the fits), and, on a cluster, that every
computation of ``y``'s chunks happens inside a round the ledger records.
"""

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression as SkLogisticRegression
from sklearn.utils.class_weight import compute_class_weight

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.compute.kernels import loss_grad
from daskglm.compute.label_counts import (
    MAX_MOMENT_CLASSES,
    count_labels,
    encode_and_weigh,
    loss_grad_by_class,
    softmax_loss_grad_by_class,
)
from daskglm.compute.multinomial import multinomial_loss_grad
from daskglm.compute.summaries import column_moments
from daskglm.engine import make_engine
from daskglm.engine.labels import encode_and_weigh_classes
from daskglm.model.families import Binomial


def _data(n_classes, n=600, d=4, seed=0, labels=None):
    """Unbalanced classes (a third of the rows in the first), positive weights."""
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n_classes, n)
    index[: n // 3] = 0
    X = rng.normal(size=(n, d)) + 0.7 * np.eye(n_classes, d)[index]
    y = index if labels is None else np.asarray(labels)[index]
    return X, y, rng.uniform(0.2, 3.0, n)


def _dask(*arrays, rows=100):
    return [None if a is None else da.from_array(a, chunks=(rows,) + a.shape[1:])
            for a in arrays]


# kernels ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [1, 2, 5])
@pytest.mark.parametrize("layout", ["float64", "float32", "csr", "unweighted"])
def test_label_counts_of_partitions_add_up_to_numpy(n_classes, layout):
    X, y, weight = _data(n_classes, n=90)
    y = y.astype(float) * 1.5 - 2.0  # labels that are not 0, 1, ...
    if layout == "unweighted":
        weight = np.ones_like(weight)
    stored = {"float32": X.astype(np.float32), "csr": sp.csr_matrix(X)}.get(layout, X)
    if layout == "float32":
        X = stored.astype(np.float64)
    parts = [(stored[a:a + 30], y[a:a + 30], None if layout == "unweighted"
              else weight[a:a + 30]) for a in (0, 30, 60)]
    total = count_labels(parts[0], True)
    for part in parts[1:]:
        total = total + count_labels(part, True)
    labels, index = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(total.labels, labels)
    np.testing.assert_allclose(total.weights, np.bincount(index, weights=weight), rtol=1e-14)
    np.testing.assert_array_equal(total.rows, np.bincount(index))
    for k in range(labels.size):
        rows = index == k
        # 1e-13 relative to the sum of the terms' magnitudes: a column whose terms cancel
        # has a small sum, which a BLAS that sums in another order changes by more than
        # 1e-13 of itself (1.3e-13 on one column with numpy 2.4's OpenBLAS)
        scale = np.abs(weight[rows]) @ np.abs(X[rows])
        np.testing.assert_allclose(total.sums[k], weight[rows] @ X[rows], rtol=0,
                                   atol=1e-13 * scale.max())
        np.testing.assert_allclose(total.squares[k], weight[rows] @ X[rows] ** 2, rtol=1e-13)


@pytest.mark.parametrize("class_weights", [None, np.array([2.0, 0.5])])
@pytest.mark.parametrize("params", [np.zeros(4), np.array([0.0, 0.0, 0.0, 0.0, -0.7])])
def test_loss_and_gradient_at_zero_coefficients_from_the_class_sums(class_weights, params):
    X, y, weight = _data(2, n=90)
    labels = np.array([-1.0, 3.0])
    y = labels[y]
    parts = [(X[a:a + 30], y[a:a + 30], weight[a:a + 30]) for a in (0, 30, 60)]
    counts = sum((count_labels(part, True) for part in parts[1:]), count_labels(parts[0], True))
    fit_intercept = params.size == 5
    found = loss_grad_by_class(counts, np.array([0.0, 1.0]), class_weights, params, Binomial(),
                               fit_intercept)
    encoded = [encode_and_weigh(part, (labels, np.array([0.0, 1.0]), class_weights))
               for part in parts]
    summed = loss_grad(encoded[0], params, Binomial(), fit_intercept)
    for part in encoded[1:]:
        summed = summed + loss_grad(part, params, Binomial(), fit_intercept)
    assert found.weight == pytest.approx(summed.weight, rel=1e-14)
    assert found.loss == pytest.approx(summed.loss, rel=1e-14)
    np.testing.assert_allclose(found.grad, summed.grad, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("class_weights", [None, np.array([2.0, 0.5, 1.5])])
@pytest.mark.parametrize("intercepts", [None, np.array([0.3, -0.2, 0.0])])
def test_softmax_loss_and_gradient_at_zero_coefficients_from_the_class_sums(class_weights,
                                                                           intercepts):
    X, y, weight = _data(3, n=90)
    parts = [(X[a:a + 30], y[a:a + 30].astype(float), weight[a:a + 30]) for a in (0, 30, 60)]
    counts = sum((count_labels(part, True) for part in parts[1:]), count_labels(parts[0], True))
    params = np.zeros(3 * 4) if intercepts is None else np.concatenate([np.zeros(12),
                                                                         intercepts])
    fit_intercept = intercepts is not None
    found = softmax_loss_grad_by_class(counts, class_weights, params, 3, fit_intercept)
    encoded = [encode_and_weigh(part, (np.arange(3.0), np.arange(3.0), class_weights))
               for part in parts]
    summed = multinomial_loss_grad(encoded[0], params, 3, fit_intercept)
    for part in encoded[1:]:
        summed = summed + multinomial_loss_grad(part, params, 3, fit_intercept)
    assert found.weight == pytest.approx(summed.weight, rel=1e-14)
    assert found.loss == pytest.approx(summed.loss, rel=1e-14)
    np.testing.assert_allclose(found.grad, summed.grad, rtol=1e-13, atol=1e-13)


def test_encode_and_weigh_codes_labels_and_multiplies_weights():
    X, y, weight = _data(3, n=30)
    labels = np.array([0.0, 1.0, 2.0])
    part = encode_and_weigh((X, y.astype(float), weight),
                            (labels, np.array([0.0, 1.0, 0.0]), np.array([2.0, 0.5, 1.0])))
    np.testing.assert_array_equal(part[1], (y == 1).astype(float))
    np.testing.assert_array_equal(part[2], weight * np.array([2.0, 0.5, 1.0])[y])
    assert part[0] is X


# the engine's totals ----------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [3, MAX_MOMENT_CLASSES + 6])
def test_engine_totals_after_class_weights_equal_the_weights_as_sample_weights(n_classes):
    X, y, weight = _data(n_classes, n=1200)
    y = y.astype(float)
    class_weights = np.linspace(0.5, 2.0, n_classes)
    with make_engine(X, y, weight, family=Binomial(), n_partitions=4,
                     labels="moments") as engine:
        counts = engine.label_counts
        np.testing.assert_array_equal(counts.labels, np.arange(n_classes))
        encode_and_weigh_classes(engine, np.arange(n_classes), class_weights)
        kinds = [r.kind for r in engine.ledger.records]
        reference = column_moments((X, y, weight * class_weights[y.astype(int)]))
        assert engine.sum_weight == pytest.approx(reference.weight, rel=1e-13)
        np.testing.assert_allclose(engine.column_moments.sums, reference.sums, rtol=1e-12)
        np.testing.assert_allclose(engine.column_moments.squares, reference.squares,
                                   rtol=1e-12)
    # the moments follow from the validation round, or (many classes) one round of their own
    extra = [] if n_classes <= MAX_MOMENT_CLASSES else [Kind.CLASS_MOMENTS]
    assert kinds == [Kind.VALIDATE, Kind.ENCODE, *extra]


# estimators: the engine's class weights are the sample weights they stand for ------------
def _lr_weights(y, weight, class_weight):
    """Per-row class weights as scikit-learn's LogisticRegression computes them."""
    classes = np.unique(y)
    per_class = compute_class_weight(class_weight, classes=classes, y=y, sample_weight=weight)
    return per_class[np.searchsorted(classes, y)], per_class


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("solver", ["lbfgs", "proximal"])
def test_logistic_class_weights_equal_the_same_sample_weights(n_classes, solver):
    X, y, weight = _data(n_classes)
    row_weights, per_class = _lr_weights(y, weight, "balanced")
    Xd, yd, wd = _dask(X, y, weight)
    params = {"C": 0.7, "tol": 1e-11, "solver": solver, "max_iter": 5000}
    if solver == "proximal":
        params["l1_ratio"] = 1.0
    ours = daskglm.LogisticRegression(class_weight="balanced", **params).fit(
        Xd, yd, sample_weight=wd)
    same = daskglm.LogisticRegression(**params).fit(Xd, yd, sample_weight=wd * row_weights)
    np.testing.assert_array_equal(ours.classes_, np.unique(y))
    assert ours.classes_.dtype == y.dtype
    np.testing.assert_allclose(ours.coef_, same.coef_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ours.intercept_, same.intercept_, rtol=1e-10, atol=1e-10)
    # scikit-learn's balanced weights, n_samples / (n_classes * weighted bincount)
    counts = np.bincount(y, weights=weight)
    np.testing.assert_allclose(per_class, counts.sum() / (n_classes * counts), rtol=1e-15)
    assert [r.kind for r in ours.comm_.records][:2] == [Kind.VALIDATE, Kind.ENCODE]


@pytest.mark.parametrize("labels", [np.array([3, 7, 11]), np.array([-2.0, 0.0, 4.0]),
                                    np.array([False, True])])
def test_logistic_on_dask_labels_equals_scikit_learn(labels):
    X, y, weight = _data(labels.size, labels=labels)
    class_weight = ("balanced" if labels.dtype.kind == "f"
                    else {labels[0].item(): 2.0, labels[-1].item(): 0.5})
    Xd, yd, wd = _dask(X, y, weight)
    ours = daskglm.LogisticRegression(C=0.7, tol=1e-10, class_weight=class_weight).fit(
        Xd, yd, sample_weight=wd)
    reference = SkLogisticRegression(C=0.7, tol=1e-12, max_iter=10_000, solver="newton-cg",
                                     class_weight=class_weight).fit(X, y, sample_weight=weight)
    np.testing.assert_array_equal(ours.classes_, reference.classes_)
    assert ours.classes_.dtype == reference.classes_.dtype
    # scikit-learn's newton-cg to round-off, ours to a largest gradient entry of 1e-10
    np.testing.assert_allclose(ours.coef_, reference.coef_, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(ours.intercept_, reference.intercept_, rtol=1e-7, atol=1e-8)


def test_label_errors_keep_their_messages_on_dask_input():
    X, y, _ = _data(2)
    Xd, = _dask(X)
    with pytest.raises(ValueError, match="only one class"):
        daskglm.LogisticRegression(class_weight="balanced").fit(
            Xd, da.zeros(X.shape[0], chunks=100))
    with pytest.raises(ValueError, match="class_weight must be"):
        daskglm.LogisticRegression(class_weight="even").fit(Xd, da.from_array(y, chunks=100))
    rows = np.arange(1200)
    with pytest.raises(ValueError, match="more than 1000 classes"):
        daskglm.LogisticRegression(class_weight="balanced").fit(
            da.from_array(np.c_[rows, rows % 7] * 1.0, chunks=(200, 2)),
            da.from_array(rows, chunks=200))
    continuous = da.from_array(np.linspace(0.0, 1.0, X.shape[0]), chunks=100)
    with pytest.raises(ValueError, match="Unknown label type: continuous"):  # as scikit-learn
        daskglm.SGDClassifier().fit(Xd, continuous)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_sgd_classifier_class_weights_from_the_engine_equal_scikit_learns(n_classes):
    X, y, weight = _data(n_classes)
    Xd, yd, wd = _dask(X, y, weight)
    params = {"random_state": 0, "max_iter": 5, "tol": None}
    ours = daskglm.SGDClassifier(class_weight="balanced", **params).fit(Xd, yd, sample_weight=wd)
    # scikit-learn's SGDClassifier balances by the number of rows (sample weights aside)
    per_class = compute_class_weight("balanced", classes=np.unique(y), y=y)
    same = daskglm.SGDClassifier(**params).fit(Xd, yd, sample_weight=wd * per_class[y])
    np.testing.assert_array_equal(ours.classes_, np.unique(y))
    np.testing.assert_allclose(ours.coef_, same.coef_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ours.intercept_, same.intercept_, rtol=1e-10, atol=1e-10)
    kinds = [r.kind for r in ours.comm_.records]
    if n_classes == 2:
        assert kinds[:2] == [Kind.VALIDATE, Kind.ENCODE]
    else:  # the binary fit's validation round found the classes; then one fit per class,
        # each encoding y and weighing the rows by class in its own engine
        assert kinds.count(Kind.VALIDATE) == n_classes + 1 == kinds.count(Kind.ENCODE) + 1


# on a cluster: no pass over y outside the ledger --------------------------------------------
def _read_chunk(chunk, log):
    """A chunk of ``y``, noting in ``log`` that it was read (by whichever worker)."""
    with open(log, "a") as file:
        file.write("read\n")
    return chunk


def _passes_over_y(tmp_path, fit, y, rows=100):
    """What ``fit(dask_y)`` returns, and how many times it read each chunk of ``y``: each
    chunk's task writes a line to a file when it runs, however Dask fuses or names it."""
    import dask

    log = str(tmp_path / "reads")
    chunks = [da.from_delayed(dask.delayed(_read_chunk, pure=False)(y[a:a + rows], log),
                              shape=(min(rows, y.size - a),), dtype=y.dtype)
              for a in range(0, y.size, rows)]
    model = fit(da.concatenate(chunks))
    with open(log) as file:
        return sum(1 for _ in file) / len(chunks), model


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("estimator", ["logistic", "sgd", "logistic_cv"])
def test_every_pass_over_y_is_a_recorded_round(client, tmp_path, estimator, n_classes):
    X, y, weight = _data(n_classes)
    Xd, wd = _dask(X, weight)
    make = {
        "logistic": lambda: daskglm.LogisticRegression(class_weight="balanced", cache="memory"),
        "sgd": lambda: daskglm.SGDClassifier(class_weight="balanced", random_state=0,
                                             max_iter=3, tol=None, batch_size=150,  # 4 steps
                                             cache="memory"),  # an epoch, each one round
        "logistic_cv": lambda: daskglm.LogisticRegressionCV(Cs=2, cv=3, class_weight="balanced",
                                                            cache="memory"),
    }[estimator]
    passes, model = _passes_over_y(tmp_path, lambda yd: make().fit(Xd, yd, sample_weight=wd), y)
    # with the partitions kept in memory each validation round reads y once, and nothing else
    # does; the cross-validated estimator's folds read y on the driver (stratified splits)
    validations = sum(r.kind == Kind.VALIDATE for r in model.comm_.records)
    folds = 1 if estimator == "logistic_cv" else 0
    assert passes == validations + folds
    assert validations == (n_classes + 1 if estimator == "sgd" and n_classes > 2 else 1)
    np.testing.assert_array_equal(model.classes_, np.unique(y))


def test_sgd_classifier_warm_start_of_one_vs_rest_on_dask_labels():
    X, y, _ = _data(3)
    Xd, yd = _dask(X, y)
    model = daskglm.SGDClassifier(random_state=0, max_iter=2, tol=None, warm_start=True)
    first = model.fit(Xd, yd).coef_.copy()
    model.fit(Xd, yd)  # starts from the three rows of the first fit
    assert model.coef_.shape == first.shape == (3, X.shape[1])
    assert not np.array_equal(model.coef_, first)
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
