"""Classification by SGD: :class:`SGDClassifier`, binary or one-vs-rest.

Two classes are one SGD run on the 0/1 encoding of the labels (``classes_[1]`` is 1), with
the label handling of :class:`~daskglm.estimators.logistic.LogisticRegression`.  More
classes are fitted one-vs-rest as scikit-learn does: one binary run per class (that class
against all others), each its own fit with its own engine, so ``n_classes`` times the
rounds of a binary fit and ``X`` read once per class.  Class weights multiply the sample
weights.  Numeric Dask labels are found, with their counts, by the validation round of
the binary fit (the engine then applies the class weights where the rows live); when it
finds more than two classes, that fit ends there and one-vs-rest follows, the round first
in ``comm_``, each class's engine encoding the labels and weighing the rows itself.  Other labels decide between the two in one pass over ``y`` before any fit.  Predictions use the decision function ``X @ coef_.T +
intercept_``; probabilities exist for the logistic and modified Huber losses only.
The one-vs-rest fits are :mod:`.sgd_one_vs_rest`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..compute.sgd_losses import CLASSIFICATION_LOSSES
from ..compute.summaries import MAX_LABELS
from ..engine import is_dask
from ..engine.driver_passes import compute_pass, records_driver_passes
from ..engine.labels import encode_and_weigh_classes
from ..model.families import Binomial
from .base import to_float, weighted_mean
from .class_weights import check_class_weight
from .logistic import LogisticRegression, class_labels, encode_binary
from .multi_output import matrix_predictor
from .sgd import _SGDBase
from .sgd_docs import SGD_DOC
from .sgd_early_stopping import frames_as_rows, with_frame_names
from .sgd_one_vs_rest import OneVsRestMixin
from .validation import check_score_input

__all__ = ["SGDClassifier"]

#: Losses with probabilities (``predict_proba``), as scikit-learn.
_PROBABILISTIC = ("log_loss", "modified_huber")


def _has_proba(estimator):
    if estimator.loss not in _PROBABILISTIC:
        raise AttributeError(f"probability estimates are not available for loss={estimator.loss!r}")
    return True


class SGDClassifier(ClassifierMixin, OneVsRestMixin, _SGDBase):
    __doc__ = (
        """Linear classification by SGD, as :class:`sklearn.linear_model.SGDClassifier`.

    Minimises ``sum(sample_weight * loss(y, X coef + intercept)) / n_samples + alpha *
    R(coef)`` (scikit-learn's SGD objective) by mini-batch or local SGD on the partitions
    of the data.  More than two
    classes are fitted one-vs-rest (one binary fit per class, ``coef_`` of shape
    ``(n_classes, n_features)``); then ``n_iter_`` is the largest over the classes,
    ``converged_`` whether all converged, each ``history_`` entry carries its ``class``,
    and ``comm_`` holds the rounds of every class's fit in order.

    Parameters
    ----------
    loss : {"hinge", "log_loss", "modified_huber", "squared_hinge", "perceptron", \
"squared_error", "huber", "epsilon_insensitive", "squared_epsilon_insensitive"}, \
default="hinge"
        With ``s = +1`` for the positive class and ``-1`` otherwise and ``p`` the decision
        function: the hinge ``max(0, 1 - s p)`` (a linear SVM), the logistic loss
        ``log(1 + exp(-s p))``, the modified Huber loss (quadratically smoothed hinge), the
        squared hinge, or the perceptron's ``max(0, -s p)``, or a regression loss of
        :class:`SGDRegressor` on ``s``; all exactly scikit-learn's.  The default is
        scikit-learn's, the hinge; ``predict_proba`` exists for ``"log_loss"`` and
        ``"modified_huber"`` only, as in scikit-learn.
    epsilon : float, default=0.1
        The ``epsilon`` of the Huber and epsilon-insensitive losses.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplying the sample weights: ``{label: weight}``
        (classes left out weigh 1) or ``"balanced"``, ``n_samples / (n_classes *
        count of the class)``.  For numeric Dask labels the engine's validation round
        counts them (no pass of its own).
    n_jobs : int or None, default=None
        Accepted for scikit-learn's signature and ignored: Dask's scheduler sets the
        parallelism over the partitions.
"""
        + SGD_DOC % {"learning_rate": "optimal", "eta0": 0.01, "power_t": 0.5}
        + """    classes_ : ndarray of shape (n_classes,)
        The labels; with two, ``classes_[1]`` is the positive class.
"""
    ).replace("    coef_ : ndarray\n    intercept_ : ndarray of shape (1,)\n",
              "    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)\n"
              "    intercept_ : ndarray of shape (1,) or (n_classes,)\n")

    _classifier = True
    _losses = ("log_loss", *CLASSIFICATION_LOSSES)
    _family_loss = "log_loss"

    def __init__(self, loss="hinge", *, penalty="l2", alpha=0.0001, l1_ratio=0.15,
                 fit_intercept=True, max_iter=1000, tol=1e-3, shuffle=True,
                 learning_rate="optimal", eta0=0.01, power_t=0.5, average=False,
                 random_state=None, n_iter_no_change=5, batch_size=16, sync_every="auto",
                 solver="sgd", solver_options=None, cache="auto", verbose=0, warm_start=False,
                 epsilon=0.1, class_weight=None, n_jobs=None, early_stopping=False,
                 validation_fraction=0.1, missing="error"):
        self.loss = loss
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.shuffle = shuffle
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.average = average
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.batch_size = batch_size
        self.sync_every = sync_every
        self.solver = solver
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.epsilon = epsilon
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.missing = missing

    def _family(self):
        return Binomial()

    def _sgd_loss(self):
        return CLASSIFICATION_LOSSES[self.loss](float(self.epsilon))

    def _check_params(self):
        super()._check_params()
        if self.class_weight is not None:
            check_class_weight(self.class_weight)

    # fitting -------------------------------------------------------------------------
    @records_driver_passes
    def fit(self, X, y, coef_init=None, intercept_init=None, sample_weight=None):
        """Fit by SGD for up to ``max_iter`` epochs; one-vs-rest for more than two classes.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        coef_init : array-like of shape (n_features,) or (n_classes, n_features), optional
            The starting coefficients (zero by default; with ``warm_start``, those of the
            previous fit); one row per class for more than two classes.
        intercept_init : array-like of shape (1,) or (n_classes,), optional
            The starting intercepts.
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.

        Returns
        -------
        self
        """
        self._check_params()
        if not is_dask(y):  # a list too: one-vs-rest compares y with each label
            y = np.asarray(y)
            if y.ndim == 2 and y.shape[1] == 1:
                y = column_or_1d(y, warn=True)
        held_out = names = None
        if self.early_stopping:  # scikit-learn's split: on all labels, before class weights
            (X, y, sample_weight), names = frames_as_rows(X, y, sample_weight)
            (X, y, sample_weight), held_out = self._split_held_out(X, y, sample_weight)
        self._fit_labels(X, y, coef_init, intercept_init, sample_weight, held_out)
        return with_frame_names(self, names)

    def _fit_labels(self, X, y, coef_init, intercept_init, sample_weight, held_out):
        """:meth:`fit` on checked labels: binary, or one-vs-rest."""
        init = (coef_init, intercept_init)
        if _labels_found_by_engine(y, coef_init) \
                and not (self.warm_start and hasattr(self, "coef_")):
            try:
                self.__dict__.pop("_one_vs_rest", None)
                return self._fit_template(X, y, sample_weight, init=init, held_out=held_out)
            except _MoreThanTwoClasses as found:
                # the validation round of the binary fit found more classes: one-vs-rest,
                # its round first in ``comm_``; each class's fit encodes y and weighs the
                # rows by class in its own engine
                weights = None if self.class_weight is None else _per_class_weights(
                    found.classes, found.rows, self.class_weight)
                return self._fit_one_vs_rest(X, y, found.classes, coef_init, intercept_init,
                                             sample_weight, held_out, found.ledger, weights)
        classes, counts = _classes_and_counts(y)
        if classes is None:  # not class labels: the binary fit says what is wrong
            return self._fit_template(X, y, sample_weight, init=init, held_out=held_out)
        if self.class_weight is not None:
            sample_weight = _weighted_rows(y, classes, counts, self.class_weight, sample_weight)
        if classes.size <= 2:
            self.__dict__.pop("_one_vs_rest", None)
            return self._fit_template(X, y, sample_weight, init=init, held_out=held_out)
        return self._fit_one_vs_rest(X, y, classes, coef_init, intercept_init, sample_weight,
                                     held_out)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        self._check_params()
        if self.early_stopping:
            raise ValueError("early_stopping should be False with partial_fit")
        if self.class_weight == "balanced":
            raise ValueError(
                "class_weight 'balanced' is not supported for partial_fit. In order to use "
                "'balanced' weights, use compute_class_weight('balanced', classes=classes, "
                "y=y). In place of y you can use a large enough sample of the full training "
                "set target to properly estimate the class frequency distributions. Pass the "
                "resulting weights as the class_weight parameter."
            )
        first = not hasattr(self, "classes_")
        if first and classes is not None:
            labels = np.unique(np.asarray(classes))
            check_classification_targets(labels)
        else:
            labels = getattr(self, "classes_", None)
        if not is_dask(y):
            check_classification_targets(np.asarray(y))
        if self.class_weight is not None and labels is not None:
            sample_weight = _weighted_rows(y, labels, None, self.class_weight, sample_weight)
        if labels is not None and labels.size > 2:
            return self._partial_fit_one_vs_rest(X, y, labels, classes, first, sample_weight)
        return self._partial_fit(X, y, sample_weight, classes)

    partial_fit.__doc__ = _SGDBase._PARTIAL_FIT_DOC % {"classes": """\
        classes : array-like of shape (n_classes,), default=None
            All labels; required on the first call, and if given later, the same.  More
            than two are fitted one-vs-rest, one binary run per class.
"""}

    def _partial_target(self, y, classes, first):
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit.")
            classes = np.unique(np.asarray(classes))
            if classes.size != 2:
                raise ValueError(f"classes must hold at least 2 labels; got {classes.tolist()}.")
            self.classes_ = classes
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes={np.unique(classes).tolist()} differs from the classes of the first "
                f"call to partial_fit, {self.classes_.tolist()}."
            )
        if is_dask(y):
            return y.map_blocks(encode_binary, self.classes_, dtype=np.float64)
        return encode_binary(y, self.classes_)

    # binary label handling, as LogisticRegression's
    _prepare_target = LogisticRegression._prepare_target
    _set_classes = LogisticRegression._set_classes

    def _held_out_target(self, y):
        return encode_binary(np.asarray(y), self.classes_)

    _labels_for_engine = LogisticRegression._labels_for_engine
    _label_summary = LogisticRegression._label_summary

    def _classes_from_engine(self, engine, labels):
        """As :meth:`LogisticRegression._classes_from_engine` for two classes; more
        (multi-class labels) end this fit for one-vs-rest.  The fit of one class of
        one-vs-rest encodes that class as 1 and the others as 0."""
        counts = engine.label_counts
        if labels.versus is not None:
            label, class_weights = labels.versus
            self.classes_ = np.array([0.0, 1.0])
            codes = (counts.labels == label).astype(np.float64)
            encode_and_weigh_classes(engine, codes, class_weights)
            return
        if 2 < counts.labels.size < MAX_LABELS:
            classes = counts.labels.astype(labels.dtype)
            if type_of_target(classes) == "multiclass":
                raise _MoreThanTwoClasses(classes, counts.rows, engine.ledger)
        LogisticRegression._classes_from_engine(self, engine, labels)

    def _class_weights_of_counts(self, counts):
        """One weight per class, as scikit-learn's SGDClassifier: ``"balanced"`` from the
        number of rows of each class (sample weights aside)."""
        return _per_class_weights(self.classes_, counts.rows, self.class_weight)

    def _set_coef(self, coef, intercept):
        self.coef_ = np.asarray(coef).reshape(1, -1)
        self.intercept_ = np.array([intercept])

    # prediction ----------------------------------------------------------------------
    def decision_function(self, X):
        """``X @ coef_.T + intercept_``: shape (n_samples,) for two classes (> 0 predicts
        ``classes_[1]``), (n_samples, n_classes) otherwise."""
        check_is_fitted(self)
        if np.shape(self.coef_)[0] == 1:
            return self._linear_predictor(X)
        return matrix_predictor(self, X)

    def predict(self, X):
        """Predicted labels from ``classes_``: the class of largest decision function."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = scores > 0
            if is_dask(positive):
                return positive.map_blocks(class_labels, self.classes_, dtype=self.classes_.dtype)
            return self.classes_[positive.astype(int)]
        best = scores.argmax(axis=1)
        if is_dask(best):
            return best.map_blocks(class_labels, self.classes_, dtype=self.classes_.dtype)
        return self.classes_[best]

    @available_if(_has_proba)
    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), columns ordered as ``classes_``.

        The logistic loss gives ``1 / (1 + exp(-p))``; the modified Huber loss
        ``(clip(p, -1, 1) + 1) / 2``; for more than two classes the one-vs-rest values are
        normalised to sum to one (uniform where they are all zero), as scikit-learn.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            scores = scores[:, None]
        rule = _logistic_proba if self.loss == "log_loss" else _huber_proba
        if is_dask(scores):
            return scores.map_blocks(rule, self.classes_.size,
                                     chunks=(scores.chunks[0], (self.classes_.size,)),
                                     dtype=scores.dtype)
        return rule(scores, self.classes_.size)

    @available_if(_has_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`."""
        return np.log(self.predict_proba(X))

    def score(self, X, y, sample_weight=None):
        """Accuracy (weighted by ``sample_weight``)."""
        X, y, sample_weight = check_score_input(X, y, sample_weight, numeric=False)
        correct = (self.predict(X) == y).astype(float)
        return to_float(weighted_mean(correct, sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


# helpers ----------------------------------------------------------------------------------
def _logistic_proba(scores, n_classes):
    from scipy.special import expit

    prob = expit(scores)
    if n_classes == 2:
        return np.hstack([1.0 - prob, prob])
    return prob / prob.sum(axis=1, keepdims=True)


def _huber_proba(scores, n_classes):
    prob = (np.clip(scores, -1.0, 1.0) + 1.0) / 2.0
    if n_classes == 2:
        return np.hstack([1.0 - prob, prob])
    total = prob.sum(axis=1, keepdims=True)
    zero = total[:, 0] == 0
    prob[zero] = 1.0
    total[zero] = n_classes
    return prob / total


def _classes_and_counts(y):
    """The sorted labels of ``y`` and their counts (one pass over a Dask ``y``), or
    ``(None, None)`` when ``y`` does not hold class labels."""
    if is_dask(y):
        import dask.array as da

        if y.ndim != 1:
            return None, None
        classes, counts = compute_pass(*da.unique(y, return_counts=True), reads=(y,))
        kind = type_of_target(classes)
    else:
        y = np.asarray(y)
        if y.ndim != 1 or y.size == 0:
            return None, None
        kind = type_of_target(y, input_name="y")
        if kind in ("binary", "multiclass"):
            classes, counts = np.unique(y, return_counts=True)
    if kind == "unknown":
        raise ValueError(f"Unknown label type: {kind}; y must hold class labels.")
    if kind not in ("binary", "multiclass"):
        return None, None
    return classes, counts


def _labels_found_by_engine(y, coef_init):
    """Whether the classes of ``y`` come from the validation round of the binary fit:
    numeric Dask labels, without a start of one row per class."""
    return (is_dask(y) and y.ndim == 1
            and (np.issubdtype(y.dtype, np.number) or y.dtype == bool)
            and (coef_init is None or np.ndim(coef_init) == 1))


class _MoreThanTwoClasses(Exception):
    """The validation round of a binary fit found more than two classes: ``classes``,
    the rows of each, and the ledger holding that round."""

    def __init__(self, classes, rows, ledger):
        super().__init__(f"{classes.size} classes")
        self.classes, self.rows, self.ledger = classes, rows, ledger


def _per_class_weights(classes, counts, class_weight):
    """The weight of each class: ``"balanced"`` is ``n_samples / (n_classes * counts)``, a
    dict names the weights (1 for classes it leaves out)."""
    if class_weight == "balanced":
        return counts.sum() / (classes.size * np.asarray(counts, dtype=np.float64))
    unknown = [label for label in class_weight if label not in set(classes.tolist())]
    if unknown:
        raise ValueError(f"The classes, {unknown}, are not in class.")
    return np.array([float(class_weight.get(label, 1.0)) for label in classes])


def _weighted_rows(y, classes, counts, class_weight, sample_weight):
    """``sample_weight`` (ones if None) times each row's class weight, a new array."""
    per_class = _per_class_weights(classes, counts, class_weight)

    def lookup(block):
        # a label not in ``classes`` gets some weight here; the label check rejects it
        return per_class[np.clip(np.searchsorted(classes, block), 0, classes.size - 1)]

    rows = y.map_blocks(lookup, dtype=np.float64) if is_dask(y) else lookup(np.asarray(y))
    if sample_weight is None:
        return rows
    if is_dask(rows) and not is_dask(sample_weight):
        import dask.array as da

        sample_weight = da.from_array(np.asarray(sample_weight, dtype=np.float64),
                                      chunks=rows.chunks)
    return rows * sample_weight
