"""One-vs-rest for :class:`~daskglm.estimators.sgd_classifier.SGDClassifier`:
:class:`OneVsRestMixin`.

More than two classes are fitted as scikit-learn fits them: one binary classifier per
class (that class against all others), each a clone of the estimator with its own seed
(as scikit-learn draws them), its own engine and its own rounds.  ``fit`` and
``partial_fit`` run them class by class; the fitted attributes stack theirs (one row of
``coef_`` per class), and ``comm_`` holds every class's rounds in order.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from ..accounting.ledger import CommReport
from ..compute.seeds import root_seed
from ..engine import is_dask
from .base import dense_coef
from .plan import LabelRequest
from .validation import column_count

__all__ = ["OneVsRestMixin"]


class OneVsRestMixin:
    """The one-vs-rest fits of a classifier of more than two classes: one binary fit per
    class, and the fitted attributes collected from them.

    Used by :class:`~daskglm.estimators.sgd_classifier.SGDClassifier`, whose binary fit
    (``_fit_template``) and ``partial_fit`` each class's clone runs.
    """

    def _binary(self, random_state):
        """The binary classifier of one class of one-vs-rest."""
        return clone(self).set_params(class_weight=None, warm_start=False,
                                      random_state=random_state)

    def _class_seeds(self, n_classes):
        """A seed per class (None each without ``random_state``), as scikit-learn draws."""
        if self.random_state is None:
            return [None] * n_classes
        draws = np.random.RandomState(root_seed(self.random_state))
        return [int(s) for s in draws.randint(np.iinfo(np.int32).max, size=n_classes)]

    def _fit_one_vs_rest(self, X, y, classes, coef_init, intercept_init, sample_weight,
                         held_out=None, discovery=None, class_weights=None):
        """One binary fit per class.  With ``discovery`` (the ledger of the validation
        round that found the classes) each fit takes the labels as they are and its engine
        encodes them (1 for the class, else 0) and weighs the rows by ``class_weights``."""
        n_classes = classes.size
        n_features = column_count(X)
        if coef_init is None and self.warm_start and hasattr(self, "coef_") \
                and np.shape(self.coef_) == (n_classes, n_features):
            coef_init, intercept_init = dense_coef(self.coef_), self.intercept_
        coef_init = _rows(coef_init, (n_classes, n_features), "coef_init")
        intercept_init = _rows(intercept_init, (n_classes,), "intercept_init")
        fits = []
        for k, (label, seed) in enumerate(zip(classes, self._class_seeds(n_classes))):
            binary = self._binary(seed)
            target, labels = (y == label).astype(np.float64), None
            if discovery is not None:
                target, labels = y, LabelRequest(
                    y.dtype, "counts" if class_weights is None else "moments",
                    (label, class_weights))
            class_held_out = None
            if held_out is not None:  # the split of all labels, this class against the rest
                X_val, y_val, weight_val = held_out
                class_held_out = (X_val, (y_val == label).astype(np.float64), weight_val)
            # the binary fit itself: its classes are known, no pass over y to find them
            init = (None if coef_init is None else coef_init[k],
                    None if intercept_init is None else intercept_init[k:k + 1])
            binary._fit_template(X, target, sample_weight, init=init, held_out=class_held_out,
                                 labels=labels)
            fits.append(binary)
        self._collect(fits, classes)
        if discovery is not None:
            method = self.comm_.method
            self.comm_ = CommReport.concatenate([discovery, self.comm_])
            self.comm_.method = method
        return self

    def _collect(self, fits, classes):
        """Fitted attributes of one-vs-rest from the binary fits of its classes."""
        first = fits[0]
        self.classes_ = classes
        self.coef_ = np.vstack([fit.coef_ for fit in fits])
        self.intercept_ = np.concatenate([fit.intercept_ for fit in fits])
        self.n_iter_ = max(fit.n_iter_ for fit in fits)
        self.t_ = max(fit.t_ for fit in fits)
        self.converged_ = all(fit.converged_ for fit in fits)
        self.history_ = [{**entry, "class": label}
                         for label, fit in zip(classes, fits) for entry in fit.history_]
        self.comm_ = CommReport.concatenate([fit.comm_ for fit in fits])
        self.solver_ = "sgd"
        self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        else:
            self.__dict__.pop("feature_names_in_", None)
        if hasattr(first, "cache_"):
            self.cache_ = first.cache_
        self._one_vs_rest = fits
        self.__dict__.pop("_sgd_state", None)

    def _partial_fit_one_vs_rest(self, X, y, labels, classes, first, sample_weight):
        """:meth:`partial_fit` of more than two ``labels``: one binary ``partial_fit`` per
        class, continuing the classes' fits of the previous calls."""
        if not first and classes is not None \
                and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes={np.unique(classes).tolist()} differs from the classes of the first "
                f"call to partial_fit, {self.classes_.tolist()}."
            )
        fits = self.__dict__.get("_one_vs_rest")
        if fits is None:
            fits = [self._binary(seed) for seed in self._class_seeds(labels.size)]
        if not is_dask(y):
            y = np.asarray(y)  # a list too: compared with each label below
        if not (is_dask(y) or np.all(np.isin(np.asarray(y), labels))):
            unknown = np.setdiff1d(np.asarray(y), labels)
            raise ValueError(
                f"y contains labels {unknown.tolist()} that are not in classes {labels.tolist()}."
            )
        for label, fit in zip(labels, fits):
            fit.partial_fit(X, (y == label).astype(np.float64), classes=[0.0, 1.0],
                            sample_weight=sample_weight)
        self._collect(fits, labels)
        return self


def _rows(values, shape, name):
    """``values`` as an array of ``shape`` (None stays None), else ValueError."""
    if values is None:
        return None
    values = np.asarray(values, dtype=np.float64)
    if values.shape != shape:
        raise ValueError(f"Provided {name} does not match dataset: shape {values.shape}, "
                         f"expected {shape}.")
    return values
