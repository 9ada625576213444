"""One fit, as values: its checked input (:class:`FitData`), what it decided before reading
the data (:class:`FitPlan`), and the engines it reads them with (:class:`FitEngines`).

The fit template (:meth:`daskglm.estimators.base._GLMBase._fit_template`) makes each once
and hands it to the next step as an argument, so no step leaves state on the estimator for
a later one to find.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..accounting.links import IN_PROCESS, Link
from ..model.families import Family
from ..solvers import Problem, Solver
from ..solvers.base import FirstEvaluation


@dataclass(frozen=True)
class LabelRequest:
    """Labels whose classes the engine's validation round finds where they live.

    Attributes
    ----------
    dtype : numpy.dtype
        The labels' dtype, which ``classes_`` keeps.
    summary : str
        What that round gathers of them: ``"counts"`` (weighted counts per class) or
        ``"moments"`` (with the column sums of each class too).
    versus : tuple or None
        ``(label, class weights)`` for the binary fit of one class of one-vs-rest: that
        class is encoded 1 and every other 0.
    """

    dtype: np.dtype
    summary: str
    versus: tuple | None = None


@dataclass(frozen=True)
class FitData:
    """One fit's checked input, as the engine takes it.

    Attributes
    ----------
    X, y, sample_weight, offset
        The features, the (encoded) targets, the row weights (class weights included) and
        the offsets; in memory or Dask arrays.
    family : Family
        The family of the targets as prepared (two classes until the validation round
        finds the classes), which the engines check them against.
    dtype : numpy.dtype
        Of the fitted coefficients: float32 for float32 features, else float64.
    labels : LabelRequest or None
        Set when ``y`` holds labels the validation round finds the classes of.
    held_out : tuple or None
        ``(X, y, sample_weight)`` of the rows held out for early stopping.
    blocks : callable or None
        For a table with categorical columns, makes ``X`` as categorical blocks
        (:func:`~daskglm.estimators.categorical.encoded_array` with ``layout="blocks"``),
        which the fit takes when its kernels read them; None otherwise.
    groups : ndarray, DaskClusterIds or None
        The rows' cluster codes for a cluster-robust covariance, or their Dask ids
        (:func:`~daskglm.estimators.robust.checked_groups`).
    weights_kind : str
        What the weights are to inference (``"frequency"``, ``"analytic"`` or
        ``"trials"``, :mod:`daskglm.model.weight_kinds`).
    """

    X: Any
    y: Any
    sample_weight: Any
    offset: Any
    family: Family
    dtype: np.dtype
    labels: LabelRequest | None = None
    held_out: tuple | None = None
    blocks: Any = None
    groups: Any = None
    weights_kind: str = "frequency"

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])


@dataclass(frozen=True)
class FitPlan:
    """What a fit decided before it reads the data.

    Attributes
    ----------
    solver_name : str
        The solver (``solver="auto"`` chosen for the shape of the data).
    problem : Problem
        The problem at unit total weight, of the family known before the data are read
        (two classes when the validation round finds the classes).
    solver : Solver
        The solver of ``problem``, its options checked.
    start : numpy.ndarray or None
        The parameters to start from (``warm_start``, ``coef_init``); None: zero
        coefficients and the family's start intercept.
    first : FirstEvaluation or None
        The solver's first evaluation, for the validation round to compute in its read of
        the data; an opaque request the engine matches against the solver's first round.
    rescale : bool
        Whether columns of extreme magnitude may be rescaled (unpenalised problems).
    final : bool
        Whether ``problem`` and ``solver`` are those of the fit whatever the data hold
        (the penalty does not scale with the total weight, the family with the classes).
    link : Link
        The network ``solver="auto"`` priced messages on (none in this process).
    """

    solver_name: str
    problem: Problem
    solver: Solver
    start: np.ndarray | None
    first: FirstEvaluation | None
    rescale: bool
    final: bool
    link: Link = IN_PROCESS


@dataclass(frozen=True)
class FitEngines:
    """The engines of one fit: the training rows', and the held-out rows' for early
    stopping (writing their rounds to the same ledger); closes both."""

    training: Any
    held_out: Any = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            if self.held_out is not None:
                self.held_out.close()
        finally:
            self.training.close()
        return False
