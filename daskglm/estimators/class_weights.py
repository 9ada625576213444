"""Class weights (``class_weight``) of the classifiers: checked, and one weight per class
as scikit-learn's ``compute_class_weight`` makes them (``"balanced"`` from the per-class
sums of the sample weights)."""

from __future__ import annotations

from numbers import Real

import numpy as np
from sklearn.utils.class_weight import compute_class_weight

from ..engine import is_dask
from ..engine.driver_passes import compute_pass


def weights_of_rows(y_index, weights):
    """The weight of each row's class, from its class index.

    Parameters
    ----------
    y_index : ndarray of shape (n_rows,)
        Each row's class index (integers, or floats holding them).
    weights : array-like of shape (n_classes,)
        One weight per class (:func:`weights_of_classes`).

    Returns
    -------
    ndarray of float64 of shape (n_rows,)
    """
    return np.asarray(weights, dtype=np.float64)[np.asarray(y_index).astype(np.intp)]


def check_class_weight(class_weight):
    """ValueError unless ``class_weight`` is ``"balanced"`` or a dict of finite weights
    >= 0 (rows are weighed by them, and weights are never negative)."""
    if not (isinstance(class_weight, dict)
            or (isinstance(class_weight, str) and class_weight == "balanced")):
        raise ValueError(
            f"class_weight must be a dict, 'balanced' or None; got {class_weight!r}."
        )
    if isinstance(class_weight, dict):
        for label, weight in class_weight.items():
            if isinstance(weight, bool) or not isinstance(weight, Real) \
                    or not np.isfinite(weight) or weight < 0:
                raise ValueError(f"class_weight values must be finite numbers >= 0; got "
                                 f"{weight!r} for class {label!r}.")


def weights_of_classes(class_weight, classes, y_index, sample_weight, counts=None):
    """One weight per class from ``class_weight``, as scikit-learn's ``compute_class_weight``.

    ``"balanced"`` is ``sum(w) / (n_classes * per-class sum of w)`` with ``w`` the sample
    weights (1 when None).

    Parameters
    ----------
    class_weight : dict or "balanced"
        Checked first.
    classes : ndarray of shape (n_classes,)
        The class labels, in order.
    y_index : ndarray or Dask array of shape (n_rows,)
        Each row's class index; counted (one pass for Dask input) for ``"balanced"`` when
        ``counts`` is None.
    sample_weight : ndarray, Dask array or None
    counts : array-like of shape (n_classes,), optional
        The per-class sums of ``w``, when known (the engine's validation round counts
        them).

    Returns
    -------
    ndarray of float64 of shape (n_classes,)

    Raises
    ------
    ValueError
        For a ``class_weight`` that is neither, or weights that are not finite and >= 0.
    """
    check_class_weight(class_weight)
    if isinstance(class_weight, str):
        if counts is None and (is_dask(y_index) or is_dask(sample_weight)):
            # labels that are not numbers, or a start given before the classes: the
            # engine has not seen them yet (one pass over y here)
            import dask.array as da

            index = da.asarray(y_index).astype(np.intp)
            counts = compute_pass(
                da.bincount(index, weights=sample_weight, minlength=classes.size),
                reads=tuple(a for a in (y_index, sample_weight) if is_dask(a)))[0]
        elif counts is None:
            counts = np.bincount(np.asarray(y_index).astype(np.intp), weights=sample_weight,
                                 minlength=classes.size)
        counts = np.asarray(counts, dtype=np.float64)
        return counts.sum() / (classes.size * counts)
    weights = compute_class_weight(class_weight, classes=classes, y=classes)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("class_weight must hold finite non-negative weights.")
    return weights
