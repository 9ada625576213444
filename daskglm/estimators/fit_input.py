"""The input side of :class:`~.base._GLMBase`: the parameters and the data of a fit
checked before any pass (:class:`~.plan.FitData`; NaN and infinity in Dask data are
found by the engine's validation round), a table's categorical columns encoded, and the
hooks through which classifiers take their labels and weights."""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _check_sample_weight, validate_data

from ..compute.summaries import MISSING_HINT
from ..engine import is_dask
from ..engine.distributed import active_client
from ..engine.driver_passes import compute_pass
from ..solvers import SOLVERS
from ..solvers.options import options_dict
from .categorical import (
    check_missing,
    encoded_array,
    is_table,
    is_table_with_categories,
    read_table,
)
from .mean_filling import filled_with_means
from .offsets import check_offset
from .plan import FitData
from .robust import checked_groups
from .validation import (
    check_dask_matrix,
    check_dask_vector,
    check_has_rows,
    check_numeric_target,
    dask_frame_to_array,
    reject_datetimes,
)
from .weight_kinds import check_weights_kind


class FitInputMixin:
    """The checks of a fit's parameters and data, and the target's hooks."""

    def _check_params(self):
        check_numbers_are_not_text(self)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}.")
        if self.solver != "auto" and self.solver not in SOLVERS:
            raise ValueError(f"Unknown solver {self.solver!r}; choose 'auto' or one of {sorted(SOLVERS)}.")
        options_dict(self.solver_options)  # a dict, typed options or None
        check_missing(getattr(self, "missing", "error"))
        if self.cache not in ("auto", "memory", "none"):
            raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {self.cache!r}.")
        if not isinstance(getattr(self, "positive", False), (bool, np.bool_)):
            raise ValueError(f"positive must be True or False; got {self.positive!r}.")

    def _validate_input(self, X, y, sample_weight):
        """Cheap checks that need no pass over the data; NaN/inf come in the engine's round."""
        X, y, sample_weight, _ = self._checked_input(X, y, sample_weight)
        self._fit_dtype = coef_dtype(X)
        return X, y, sample_weight

    def _checked_input(self, X, y, sample_weight):
        """The checked ``(X, y, sample_weight)``, and for a table with categorical columns
        a function making its features as categorical blocks (None otherwise)."""
        reject_datetimes(X)
        missing = getattr(self, "missing", "error")
        encoding = means = blocks = None
        if is_table_with_categories(X) or (missing == "mean" and is_table(X)):
            encoding, lengths, kept = read_table(X, drop_first=not self._penalised(),
                                                 missing=missing,
                                                 cache=getattr(self, "cache", "auto"),
                                                 client=active_client())
            if encoding.levels:
                blocks = functools.partial(encoded_array, X, encoding, lengths=lengths,
                                           layout="blocks", kept=kept)
            X = encoded_array(X, encoding, compute=compute_pass, lengths=lengths, kept=kept)
        elif missing == "mean":
            X, means = filled_with_means(X)
        X, y, sample_weight = self._checked_arrays(X, y, sample_weight)
        for name in ("table_encoding_", "feature_names_out_", "column_means_", "formula_",
                     "formula_design_"):
            self.__dict__.pop(name, None)
        if means is not None:
            self.column_means_ = means
        if encoding is not None:
            self.table_encoding_ = encoding
            self.feature_names_in_ = np.asarray(encoding.columns, dtype=object)
            self.n_features_in_ = len(encoding.columns)
            self.feature_names_out_ = encoding.feature_names_out
        return X, y, sample_weight, blocks

    def _penalised(self):
        """Whether the fit's penalty is not zero (a table's categorical columns then keep
        every level)."""
        try:
            penalty = self._penalty(1.0)
        except AttributeError:  # a cross-validated path: every fit on it is penalised
            return True
        return bool(np.any(np.asarray(getattr(penalty, "alpha", 0.0)) > 0))

    def _checked_arrays(self, X, y, sample_weight):
        if is_dask(X) or is_dask(y) or is_dask(sample_weight):
            X, names = dask_frame_to_array(X) if is_dask(X) else (X, None)
            y, _ = dask_frame_to_array(y) if is_dask(y) else (y, None)
            if not is_dask(X):
                X = validate_data(self, X, reset=True, accept_sparse=False,
                                  dtype=[np.float64, np.float32], ensure_all_finite=True)
            else:
                check_dask_matrix(X)
                check_has_rows(X)
                self.n_features_in_ = int(X.shape[1])
                if names is not None and all(isinstance(n, str) for n in names):
                    self.feature_names_in_ = names
                elif hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            if is_dask(y):
                y = check_dask_vector(y, "y", X.shape[0], numeric=not self._classifier)
            else:
                y = np.asarray(y)
                if not self._classifier:
                    check_numeric_target(y, self)
            if sample_weight is not None:
                if is_dask(sample_weight):
                    sample_weight = check_dask_vector(dask_frame_to_array(sample_weight)[0],
                                                       "sample_weight", X.shape[0])
                else:
                    sample_weight = np.asarray(sample_weight, dtype=np.float64)
                    if sample_weight.shape != (X.shape[0],):
                        raise ValueError(
                            f"sample_weight.shape == {sample_weight.shape}, expected ({X.shape[0]},)!"
                        )
            return X, y, sample_weight
        if not self._classifier:
            check_numeric_target(np.asarray(y) if not hasattr(y, "dtype") else y, self)
        try:
            X, y = validate_data(
                self, X, y, reset=True, accept_sparse=["csr", "csc", "coo"],
                dtype=[np.float64, np.float32], y_numeric=not self._classifier,
                multi_output=False,
            )
        except ValueError as exc:
            if str(exc).startswith("Input X contains NaN") and not sp.issparse(X):
                raise ValueError(f"{exc} {MISSING_HINT}") from exc
            raise
        if hasattr(X, "tocsr"):
            X = X.tocsr()
        if sample_weight is not None:
            sample_weight = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )
        return X, y, sample_weight

    def _weigh_samples(self, y, sample_weight, labels=None):
        """Hook for weights that depend on the (encoded) target, e.g. class weights;
        with ``labels`` (a :class:`~.plan.LabelRequest`) the engine weighs the rows."""
        return sample_weight

    def _prepare_target(self, y):
        """Hook for classifiers to encode labels; regressors check the family's support."""
        if not is_dask(y):
            self._family().check_target(y)
        return y

    def _fit_data(self, X, y, sample_weight, offset, exposure, init=None, held_out=None,
                  labels=None, groups=None, weights_kind=None):
        """The checked input of one fit: cheap checks that need no pass over the data
        (NaN and infinity are found in the engine's validation round)."""
        weights_kind = check_weights_kind(weights_kind, self._family(), self._classifier)
        X, y, sample_weight, blocks = self._checked_input(X, y, sample_weight)
        self._fit_dtype = coef_dtype(X)
        offset = check_offset(self, offset, exposure, X, self._family())
        groups = checked_groups(self, groups, X.shape[0])
        if labels is None:
            labels = self._labels_for_engine(y, init)
        if labels is None:
            y = self._prepare_target(y)
        family = self._family()  # of the classes found on the driver
        if offset is not None and not getattr(family, "takes_offset", True):
            raise ValueError(f"The {family.name} model takes no offset.")
        sample_weight = self._weigh_samples(y, sample_weight, labels)
        return FitData(X, y, sample_weight, offset, family, coef_dtype(X), labels, held_out,
                       blocks, groups, weights_kind)

    def _labels_for_engine(self, y, init):
        """The labels whose classes the validation round finds (classifiers), else None:
        regressors' targets are checked and prepared on the driver."""
        return None


def coef_dtype(X):
    """The dtype of the coefficients fitted to ``X``: float32 stays float32.

    Parameters
    ----------
    X : ndarray, sparse matrix or Dask array

    Returns
    -------
    numpy.dtype
        float32 for float32 ``X``, float64 otherwise.
    """
    return np.dtype(np.float32 if X.dtype == np.float32 else np.float64)


#: Parameters that take numbers (or arrays of them), never text.
_NUMERIC_PARAMS = ("alpha", "C", "tol", "l1_ratio", "eta0", "power_t", "epsilon",
                   "power", "n_alphas", "eps", "Cs", "alphas", "l1_ratios")


def check_numbers_are_not_text(estimator):
    """A ValueError naming the parameter for a number given as text (as from a
    configuration file), before it fails inside the arithmetic."""
    for name in _NUMERIC_PARAMS:
        value = getattr(estimator, name, None)
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{name} must be a number; got {value!r}.")
