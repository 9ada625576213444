"""Logistic regression, binary and multinomial: :class:`LogisticRegression` and the
class-label helpers.

``PENALTY_FROM_L1_RATIO`` says whether the installed scikit-learn takes the penalty from
``l1_ratio`` (1.8 and later), which sets ``LogisticRegression``'s defaults.
:class:`~daskglm.estimators.sgd.SGDClassifier` borrows the label handling and the
predictions of :class:`LogisticRegression`, and :func:`encode_binary` for ``partial_fit``.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import sklearn
from sklearn.base import ClassifierMixin
from sklearn.linear_model._base import SparseCoefMixin
from sklearn.utils.fixes import parse_version
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from ..backend import array_module, is_device, namespace, to_host
from ..compute.summaries import MAX_LABELS
from ..engine import is_dask
from ..engine.driver_passes import compute_pass, records_driver_passes
from ..engine.labels import encode_and_weigh_classes, encode_class_indices
from ..model.families import Binomial
from ..model.multinomial import Multinomial, MultinomialProblem
from ..model.numerics import softmax
from ..model.penalties import L1, L2, NoPenalty, make_penalty
from .base import _GLMBase
from .class_weights import check_class_weight, weights_of_classes, weights_of_rows
from .dask_ml_params import DASK_ML_DOC
from .docstrings import COMMON_DOC, FITTED_DOC
from .inference import INFERENCE_DOC, INFERENCE_FITTED_DOC
from .linear_predictors import (
    apply_rowwise,
    dense_coef,
    to_float,
    two_class_probabilities,
    weighted_mean,
)
from .plan import LabelRequest
from .sklearn_solvers import LOGISTIC_SOLVERS
from .validation import check_score_input

#: scikit-learn 1.8 deprecated ``LogisticRegression(penalty=...)``: the penalty follows
#: from ``l1_ratio`` (and ``C=inf`` for none).  The defaults follow the installed version.
PENALTY_FROM_L1_RATIO = parse_version(sklearn.__version__) >= parse_version("1.8")


class LogisticRegression(ClassifierMixin, SparseCoefMixin, _GLMBase):
    __doc__ = (
        """Logistic regression, as :class:`sklearn.linear_model.LogisticRegression`.

    Two classes give the binary model (``coef_`` of shape (1, n_features)); more give the
    multinomial (softmax) model of scikit-learn, with one row of ``coef_`` and one
    intercept per class (the intercepts summing to zero), fitted in one problem (every
    evaluation reads ``X`` once for all classes; solvers ``"lbfgs"``, ``"gd"`` and
    ``"newton"``, and ``"proximal"``, also for L1 and elastic-net penalties).

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
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplying ``sample_weight``: ``{label: weight}``
        (classes not named weigh 1), or ``"balanced"``, ``sum(w) / (n_classes * sum of w
        in the class)``, as scikit-learn.  For numeric Dask labels the sums come from the
        engine's validation round and the rows are weighed where they live.

    ``solver`` also takes scikit-learn's names (:mod:`~.sklearn_solvers`): ``"newton-cg"``
    and ``"newton-cholesky"`` run ``"newton"``, ``"sag"`` and ``"saga"`` ``"lbfgs"`` (with
    an L1 term ``"proximal"``); ``"liblinear"``, which penalises the intercept, is refused.
"""
        + INFERENCE_DOC.replace("unpenalised fit", "unpenalised fit (``penalty=None`` or "
                                 "``C=inf``)")
        + COMMON_DOC
        + DASK_ML_DOC
        + FITTED_DOC.replace("n_iter_ : int\n", "n_iter_ : ndarray of shape (1,)\n")
        + INFERENCE_FITTED_DOC
        + """    classes_ : ndarray of shape (n_classes,)
        The sorted labels; with two, ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
"""
    )

    _classifier = True
    #: More than two classes fit the multinomial model (estimators borrowing the label
    #: handling without it accept two classes only).
    _multinomial = True
    _sklearn_solvers = LOGISTIC_SOLVERS

    def __init__(self, penalty="auto" if PENALTY_FROM_L1_RATIO else "l2", *, C=1.0,
                 l1_ratio=0.0 if PENALTY_FROM_L1_RATIO else None, solver="auto", fit_intercept=True,
                 tol=1e-4, max_iter=100, solver_options=None, cache="auto", verbose=0,
                 warm_start=False, inference=False, cov_type="nonrobust",
                 cov_kwds=None, class_weight=None, missing="error",
                 dual=False, intercept_scaling=1.0, random_state=None, multi_class="auto",
                 n_jobs=None, solver_kwargs=None):
        self.dual = dual
        self.intercept_scaling = intercept_scaling
        self.random_state = random_state
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.solver_kwargs = solver_kwargs
        self.inference, self.cov_type, self.cov_kwds = inference, cov_type, cov_kwds
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.class_weight = class_weight
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.missing = missing

    @records_driver_passes
    def fit(self, X, y, sample_weight=None, offset=None, exposure=None, *, coef_init=None,
            intercept_init=None, groups=None, weights_kind=None):
        """Fit the model.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
            Class labels.
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.
        offset, exposure, groups : array-like or Dask array of shape (n_samples,), optional
            As for :meth:`GLM.fit` (two classes only; ``groups`` may have two columns).
        coef_init : array-like of shape (n_classes, n_features), optional
            Coefficients to start from, shaped as ``coef_`` ((1, n_features) or
            (n_features,) for two classes).  Takes precedence over ``warm_start``.
        intercept_init : array-like of shape (n_classes,), optional
            Intercepts to start from (zero when ``coef_init`` is given without them).
        weights_kind : {"frequency", "analytic"}, optional
            What ``sample_weight`` means to inference (see :meth:`daskglm.GLM.fit`).

        Returns
        -------
        self
        """
        self._warn_ignored_parameters()
        return self._fit_template(X, y, sample_weight, offset, exposure,
                                  init=(coef_init, intercept_init), groups=groups,
                                  weights_kind=weights_kind)

    def _warn_ignored_parameters(self):
        """scikit-learn's UserWarnings for a ``C`` or ``l1_ratio`` the penalty ignores."""
        penalty, l1_ratio = self._penalty_name(), self.l1_ratio
        if not isinstance(l1_ratio, (int, float, np.number)):
            l1_ratio = None  # None, or a bad value the penalty's check refuses
        if self.penalty in ("auto", "deprecated") \
                and isinstance(self.C, (int, float, np.number)) and math.isinf(self.C):
            penalty = None  # C=inf: no penalty
        if penalty != "elasticnet" and l1_ratio is not None and 0 < l1_ratio < 1:
            warnings.warn("l1_ratio parameter is only used when penalty is 'elasticnet'. "
                          f"Got (penalty={penalty})", UserWarning, stacklevel=3)
        if l1_ratio is not None and ((self.penalty == "l2" and l1_ratio != 0)
                                     or (self.penalty == "l1" and l1_ratio != 1)):
            warnings.warn(f"Inconsistent values: penalty={self.penalty} with "
                          f"l1_ratio={l1_ratio}. penalty is deprecated. Please use "
                          f"l1_ratio only.", UserWarning, stacklevel=3)
        if self.penalty in (None, "none") and self.C != 1.0:
            warnings.warn("Setting penalty=None will ignore the C and l1_ratio parameters",
                          UserWarning, stacklevel=3)

    def _record_fit(self, problem, result):
        """The fitted attributes; ``n_iter_`` of shape (1,), as scikit-learn's."""
        super()._record_fit(problem, result)
        self.n_iter_ = np.array([result.n_iter], dtype=np.int32)

    #: ``C`` weighs the summed loss: the penalty on the mean-loss scale is ``1 / (C * total weight)``.
    _penalty_scales_with_weight = True

    @property
    def _n_classes(self):
        """Classes of the fit: those found (``classes_``), two until they are."""
        classes = getattr(self, "classes_", None)
        return 2 if classes is None else int(np.size(classes))

    def _check_inference(self, penalty):
        super()._check_inference(penalty)
        if getattr(self, "inference", False) and self._n_classes > 2:
            raise ValueError("inference=True is for two classes; y has "
                             f"{self._n_classes} (the multinomial model).")

    def _family(self):
        n_classes = self._n_classes
        if n_classes > 2 and getattr(self, "multi_class", "auto") == "ovr":
            raise ValueError(f"multi_class='ovr' with {n_classes} classes: daskglm fits the "
                             "multinomial model (multi_class='auto'); for one-vs-rest use "
                             "sklearn.multiclass.OneVsRestClassifier(LogisticRegression()).")
        return Multinomial(n_classes) if n_classes > 2 else Binomial()

    def _problem(self, penalty, n_features, has_offset=False):
        family = self._family()
        if getattr(family, "predictor_per_class", False):
            return MultinomialProblem(family, penalty, bool(self.fit_intercept), n_features,
                                      has_offset, n_classes=family.n_classes)
        return super()._problem(penalty, n_features, has_offset)

    def _previous_params(self, init, n_features):
        """``init`` (``coef_init``, ``intercept_init``), else with ``warm_start`` the
        previous fit's coefficients, as one parameter vector; ValueError when their shape
        does not fit."""
        coef_init, intercept_init = (None, None) if init is None else init
        if coef_init is None:
            if intercept_init is not None:
                raise ValueError("intercept_init needs coef_init.")
            if not self.warm_start or not hasattr(self, "coef_"):
                return None
            coef_init, intercept_init, source = dense_coef(self.coef_), self.intercept_, "warm_start"
        else:
            source = "coef_init"
        rows = self._n_classes if self._n_classes > 2 else 1
        shape = (rows, n_features)
        coef = np.asarray(coef_init, dtype=np.float64)
        if coef.shape != shape and not (rows == 1 and coef.shape == shape[1:]):
            raise ValueError(
                f"{source}: the coefficients have shape {coef.shape}; this fit of "
                f"{self._n_classes} classes and {self.n_features_in_} features needs {shape}."
            )
        intercept = np.zeros(rows) if intercept_init is None else np.ravel(
            np.asarray(intercept_init, dtype=np.float64))
        if intercept.shape != (rows,):
            raise ValueError(
                f"{source}: the intercepts have shape {intercept.shape}; expected ({rows},)."
            )
        if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
            raise ValueError(f"{source}: the coefficients contain NaN or infinity.")
        params = coef.ravel()
        return np.concatenate([params, intercept]) if self.fit_intercept else params.copy()

    def _weigh_samples(self, y, sample_weight, labels=None):
        """``sample_weight`` times the weight of each row's class (``class_weight``)."""
        if self.class_weight is None:
            return sample_weight
        if labels is not None:  # weighed by the engine, by class
            check_class_weight(self.class_weight)
            return sample_weight
        weights = weights_of_classes(self.class_weight, self.classes_, y, sample_weight)
        if is_dask(y):
            row_weight = y.map_blocks(weights_of_rows, weights, dtype=np.float64)
        else:
            row_weight = weights_of_rows(y, weights)
        return row_weight if sample_weight is None else sample_weight * row_weight

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

    def _labels_for_engine(self, y, init):
        """Numeric Dask labels stay as they are: the engine's validation round finds the
        classes and their weighted counts, and one ``encode`` round encodes them and
        weighs the rows by class where they live (:meth:`_classes_from_engine`).  Only a
        start given before the classes are known (``coef_init``, ``warm_start``) and
        labels that are not numbers take a pass over Dask ``y`` (:meth:`_prepare_target`).
        """
        needs_classes = ((init is not None and init[0] is not None)
                         or (self.warm_start and hasattr(self, "coef_")))
        if is_dask(y) and (np.issubdtype(y.dtype, np.number) or y.dtype == bool) \
                and not needs_classes:
            self.__dict__.pop("classes_", None)  # the previous fit's; found again
            return LabelRequest(y.dtype, self._label_summary())
        return None

    def _prepare_target(self, y):
        """Labels encoded as class indices (0/1 for two classes), their classes found
        here (a pass over Dask labels)."""
        if is_dask(y):
            import dask.array as da

            classes = np.unique(compute_pass(da.unique(y), reads=(y,))[0])
            kind = type_of_target(classes, input_name="y")
        else:
            kind = type_of_target(y, input_name="y")
            classes = np.unique(y)
        self._set_classes(classes, kind)
        if classes.size == 2:
            return (y == classes[1]).astype(np.float64)
        if is_dask(y):
            return y.map_blocks(_class_index, classes, dtype=np.float64)
        return _class_index(y, classes)

    def _label_summary(self):
        """What the validation round gathers of the labels: their weighted counts, and
        with class weights the column moments of each class too."""
        return "counts" if getattr(self, "class_weight", None) is None else "moments"

    def _set_classes(self, classes, kind):
        """Check there are at least two classes and store them in ``classes_``."""
        if kind in ("continuous", "continuous-multioutput"):
            raise ValueError(f"Unknown label type: {kind}. Labels must be class names, not a continuous target.")
        if classes.size < 2:
            raise ValueError(
                f"This solver needs samples of at least 2 classes in the data, but the data "
                f"contains only one class: {classes[0] if classes.size else None!r}."
            )
        if classes.size > 2 and not getattr(self, "_multinomial", False):
            raise ValueError(
                f"Only binary classification is supported: {type(self).__name__} got y with "
                f"{classes.size} or more classes (target type {kind})."
            )
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"Unknown label type: {kind}. Labels must be one class per sample.")
        self.classes_ = classes

    def _classes_from_engine(self, engine, labels):
        """``classes_`` (of the labels' dtype) from the labels the validation round found
        (``labels``, a :class:`~.plan.LabelRequest`);
        the targets are then encoded (0/1, or class indices) where they live, and with
        ``class_weight`` the rows weighed by class in the same round."""
        counts = engine.label_counts
        found = counts.labels
        dtype = labels.dtype
        kind = type_of_target(found.astype(dtype), input_name="y")
        if kind != "continuous" and found.size >= MAX_LABELS:
            raise ValueError(f"y has more than {MAX_LABELS - 1} classes.")
        self._set_classes(found.astype(dtype), kind)
        class_weights = None
        if getattr(self, "class_weight", None) is not None:
            class_weights = self._class_weights_of_counts(counts)
        codes = np.arange(found.size, dtype=np.float64)
        if class_weights is not None or (found.size <= 2 and not np.array_equal(found, codes)):
            encode_and_weigh_classes(engine, codes, class_weights)
        elif found.size > 2:
            encode_class_indices(engine, found)

    def _class_weights_of_counts(self, counts):
        """One weight per class from ``class_weight`` and the labels' counts of the
        validation round: ``"balanced"`` from their weighted counts, as scikit-learn."""
        return weights_of_classes(self.class_weight, self.classes_, None, None,
                              counts=counts.weights)

    def _set_coef(self, coef, intercept):
        if np.ndim(coef) == 2:  # multinomial: one row and one intercept per class
            # adding one constant to every intercept leaves the model unchanged: report
            # the intercepts that sum to zero, as scikit-learn
            intercept = np.asarray(intercept, dtype=float)
            self.coef_, self.intercept_ = coef, intercept - intercept.mean()
            return
        self.coef_ = coef.reshape(1, -1)
        self.intercept_ = np.array([intercept])

    def decision_function(self, X):
        """Linear predictor ``X @ coef_.T + intercept_``.

        Shape (n_samples,) for two classes (> 0 predicts ``classes_[1]``), else
        (n_samples, n_classes).
        """
        check_is_fitted(self)
        if _multinomial_fitted(self):
            return self._linear_predictors(X)
        return self._linear_predictor(X)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), columns ordered as ``classes_``."""
        check_is_fitted(self)
        if _multinomial_fitted(self):
            return apply_rowwise(_softmax_rows, self._linear_predictors(X))
        return self._linear_predictor(
            X, then=functools.partial(two_class_probabilities, self._family().mean), columns=2)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def predict(self, X):
        """Predicted labels from ``classes_``."""
        check_is_fitted(self)
        if _multinomial_fitted(self):
            eta = self._linear_predictors(X)
            if is_dask(eta):
                return eta.map_blocks(_most_likely, self.classes_, drop_axis=1,
                                      dtype=self.classes_.dtype)
            return _most_likely(eta, self.classes_)
        positive = self._linear_predictor(X) > 0
        if is_dask(positive):
            return positive.map_blocks(class_labels, self.classes_, dtype=self.classes_.dtype)
        return self.classes_[positive.astype(int)]

    def score(self, X, y, sample_weight=None):
        """Accuracy (weighted by ``sample_weight``)."""
        X, y, sample_weight = check_score_input(X, y, sample_weight, numeric=False)
        correct = (self.predict(X) == y).astype(float)
        return to_float(weighted_mean(correct, sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        return tags


# class labels ---------------------------------------------------------------------------
def class_labels(positive, classes):
    """``classes[1]`` where ``positive``, else ``classes[0]``; on the GPU for CuPy blocks of
    numeric labels."""
    return _labels_at(positive.astype(int), classes)


def _labels_at(index, classes):
    """``classes[index]``; on the GPU for CuPy ``index`` and numeric labels."""
    if is_device(index) and classes.dtype.kind in "biuf":
        return array_module(index).asarray(classes)[index]
    return classes[to_host(index)]


def encode_binary(y, classes):
    """``1.0`` where ``y == classes[1]``, ``0.0`` where ``y == classes[0]``, else ValueError."""
    y = np.asarray(y)
    known = (y == classes[0]) | (y == classes[1])
    if not np.all(known):
        unknown = np.unique(y[~known])
        raise ValueError(
            f"y contains labels {unknown.tolist()} that are not in classes {classes.tolist()}."
        )
    return (y == classes[1]).astype(np.float64)


def _multinomial_fitted(model):
    """Whether ``model`` holds one row of coefficients per class (more than two)."""
    return np.ndim(model.coef_) == 2 and np.shape(model.coef_)[0] > 1


def _class_index(y, classes):
    """Indices of the labels ``y`` in the sorted ``classes``, as floats."""
    return np.searchsorted(classes, np.asarray(y)).astype(np.float64)


def _softmax_rows(eta):
    """The softmax of each row of ``eta``."""
    return softmax(eta, axis=1)


def _most_likely(eta, classes):
    """The label of the largest predictor of each row."""
    return _labels_at(namespace(eta).argmax(eta, axis=1), classes)
