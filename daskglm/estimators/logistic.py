"""Binary classification: :class:`LogisticRegression` and the class-label helpers.

``PENALTY_FROM_L1_RATIO`` says whether the installed scikit-learn takes the penalty from
``l1_ratio`` (1.8 and later), which sets ``LogisticRegression``'s defaults.
:class:`~daskglm.estimators.sgd.SGDClassifier` borrows the label handling and the
predictions of :class:`LogisticRegression`, and :func:`_encode_binary` for ``partial_fit``.
"""

from __future__ import annotations

import math

import numpy as np
import sklearn
from sklearn.base import ClassifierMixin
from sklearn.utils.fixes import parse_version
from sklearn.utils.multiclass import type_of_target

from ..compute.backend import array_module, is_device, to_host
from ..engine import is_dask
from ..model.families import Binomial
from ..model.penalties import L1, L2, NoPenalty, make_penalty
from .base import _COMMON_DOC, _FITTED_DOC, _apply_rowwise, _GLMBase, _to_float, _weighted_mean
from .inference import _INFERENCE_DOC, _INFERENCE_FITTED_DOC
from .validation import _check_score_input

#: scikit-learn 1.8 deprecated ``LogisticRegression(penalty=...)``: the penalty follows
#: from ``l1_ratio`` (and ``C=inf`` for none).  The defaults follow the installed version.
PENALTY_FROM_L1_RATIO = parse_version(sklearn.__version__) >= parse_version("1.8")


class LogisticRegression(ClassifierMixin, _GLMBase):
    __doc__ = (
        """Binary logistic regression, as :class:`sklearn.linear_model.LogisticRegression`.

    Minimises ``C * sum_i w_i loss_i + penalty(coef)`` with penalty ``||coef||^2 / 2``
    (``"l2"``), ``||coef||_1`` (``"l1"``) or ``l1_ratio * ||coef||_1 + (1 - l1_ratio) / 2
    * ||coef||^2`` (``"elasticnet"``); ``penalty=None`` or ``C=inf`` fits without one.

    Parameters
    ----------
    penalty : {"auto", "l2", "l1", "elasticnet"} or None
        ``"auto"`` (the default with scikit-learn 1.8 and later, which chooses the penalty
        this way and deprecates ``penalty``; ``"deprecated"`` is the same) takes the penalty
        from ``l1_ratio``: ``"l2"`` at 0, ``"l1"`` at 1, ``"elasticnet"`` in between.
        With older scikit-learn the default is ``"l2"``.
    C : float, default=1.0
        Inverse regularisation strength, > 0; ``inf`` fits without a penalty.
    l1_ratio : float, optional
        Elastic-net mixing in [0, 1] (default 0.0 with scikit-learn 1.8 and later, None
        before), required with ``penalty="elasticnet"``.
"""
        + _INFERENCE_DOC.replace("unpenalised fit", "unpenalised fit (``penalty=None`` or "
                                 "``C=inf``)")
        + _COMMON_DOC
        + _FITTED_DOC
        + _INFERENCE_FITTED_DOC
        + """    classes_ : ndarray of shape (2,)
        The two labels; ``classes_[1]`` is the positive class.
"""
    )

    _classifier = True

    def __init__(self, penalty="auto" if PENALTY_FROM_L1_RATIO else "l2", *, C=1.0,
                 l1_ratio=0.0 if PENALTY_FROM_L1_RATIO else None, solver="auto", fit_intercept=True,
                 tol=1e-4, max_iter=100, solver_options=None, cache="auto", verbose=0,
                 warm_start=False, inference=False):
        self.inference = inference
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start

    def _family(self):
        return Binomial()

    def _penalty(self, total_weight):
        if not (isinstance(self.C, (int, float, np.number)) and self.C > 0):
            raise ValueError(f"C must be a positive number; got {self.C!r}.")
        penalty = self._penalty_name()
        if penalty is None or math.isinf(self.C):
            return NoPenalty()
        strength = 1.0 / (self.C * total_weight)
        if penalty == "l2":
            return L2(strength)
        if penalty == "l1":
            return L1(strength)
        return make_penalty("elasticnet", strength, self.l1_ratio)

    def _penalty_name(self):
        """``"l2"``, ``"l1"``, ``"elasticnet"`` or None, from ``penalty`` and ``l1_ratio``."""
        if self.penalty in ("auto", "deprecated"):
            l1_ratio = self.l1_ratio
            if l1_ratio is not None and not (
                isinstance(l1_ratio, (int, float, np.number)) and 0 <= l1_ratio <= 1
            ):
                raise ValueError(f"l1_ratio must be a number in [0, 1]; got {l1_ratio!r}.")
            if l1_ratio is None or l1_ratio == 0:
                return "l2"
            return "l1" if l1_ratio == 1 else "elasticnet"
        if self.penalty not in ("l2", "l1", "elasticnet", None, "none"):
            raise ValueError(
                f"penalty must be 'auto', 'l2', 'l1', 'elasticnet' or None; got {self.penalty!r}."
            )
        return None if self.penalty == "none" else self.penalty

    def _prepare_target(self, y):
        if is_dask(y) and (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
            # numeric labels are found by the engine's validation round (no extra pass)
            self._labels_from_engine = y.dtype
            return y
        if is_dask(y):
            import dask.array as da

            classes = np.unique(da.unique(y).compute())
            kind = "binary" if classes.size <= 2 else "multiclass"
        else:
            kind = type_of_target(y, input_name="y")
            classes = np.unique(y)
        self._set_classes(classes, kind)
        return (y == classes[1]).astype(np.float64)

    def _set_classes(self, classes, kind):
        """Check there are exactly two classes and store them in ``classes_``."""
        if kind in ("continuous", "continuous-multioutput"):
            raise ValueError(f"Unknown label type: {kind}. Labels must be class names, not a continuous target.")
        if classes.size < 2:
            raise ValueError(
                f"This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0] if classes.size else None!r}."
            )
        if classes.size > 2:
            raise ValueError(
                f"Only binary classification is supported: {type(self).__name__} got y with "
                f"{classes.size} or more classes (target type {kind})."
            )
        self.classes_ = classes

    def _classes_from_engine(self, engine, dtype):
        """``classes_`` (of the labels' dtype) from the labels the validation round found;
        the targets are then encoded to 0/1 where they live."""
        found = np.asarray(engine.labels, dtype=np.float64)
        self._set_classes(found.astype(dtype), "binary" if found.size <= 2 else "multiclass")
        if not np.array_equal(found, [0.0, 1.0]):
            engine.relabel(found[1])

    def _set_coef(self, coef, intercept):
        self.coef_ = coef.reshape(1, -1)
        self.intercept_ = np.array([intercept])

    def decision_function(self, X):
        """Linear predictor ``X @ coef_ + intercept_``; > 0 predicts ``classes_[1]``."""
        return self._linear_predictor(X)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, 2), columns ordered as ``classes_``."""
        prob = _apply_rowwise(self._family().mean, self._linear_predictor(X))
        if is_dask(prob):
            import dask.array as da

            return da.stack([1.0 - prob, prob], axis=1)
        return np.column_stack([1.0 - prob, prob])

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def predict(self, X):
        """Predicted labels from ``classes_``."""
        positive = self._linear_predictor(X) > 0
        if is_dask(positive):
            return positive.map_blocks(_class_labels, self.classes_, dtype=self.classes_.dtype)
        return self.classes_[positive.astype(int)]

    def score(self, X, y, sample_weight=None):
        """Accuracy (weighted by ``sample_weight``)."""
        X, y, sample_weight = _check_score_input(X, y, sample_weight, numeric=False)
        correct = (self.predict(X) == y).astype(float)
        return _to_float(_weighted_mean(correct, sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


# class labels ---------------------------------------------------------------------------
def _class_labels(positive, classes):
    """``classes[1]`` where ``positive``, else ``classes[0]``; on the GPU for CuPy blocks of
    numeric labels."""
    index = positive.astype(int)
    if is_device(index) and classes.dtype.kind in "biuf":
        return array_module(index).asarray(classes)[index]
    return classes[to_host(index)]


def _encode_binary(y, classes):
    """``1.0`` where ``y == classes[1]``, ``0.0`` where ``y == classes[0]``, else ValueError."""
    y = np.asarray(y)
    known = (y == classes[0]) | (y == classes[1])
    if not np.all(known):
        unknown = np.unique(y[~known])
        raise ValueError(
            f"y contains labels {unknown.tolist()} that are not in classes {classes.tolist()}."
        )
    return (y == classes[1]).astype(np.float64)
