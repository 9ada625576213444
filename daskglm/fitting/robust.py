"""The round of the robust covariances beyond HC0 and HC1 (HC2, HC3, cluster-robust):
each row's leverage and the scores summed per cluster, from one ``Kind.ROBUST`` round
(:func:`daskglm.compute.robust.robust_sums`) with the rows' cluster codes sent to their
partitions."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.robust import robust_sums
from ..engine.folds import fold_ids_by_partition

__all__ = ["robust_statistics"]


def robust_statistics(engine, problem, params, cov_type, codes, inverse,
                      weights_kind="frequency"):
    """The :class:`~daskglm.compute.robust.RobustStats` of the fit at ``params``
    (solvers' order and the engine's column scale), from one ``Kind.ROBUST`` round (and
    a ``sizes`` round to cut ``codes`` by partition); None when neither HC2, HC3 nor
    clusters are asked for.  ``inverse`` is the inverse expected information at
    ``params``, in the same order and scale; ``weights_kind`` what the row weights
    are."""
    leverage = cov_type in ("HC2", "HC3")
    if not leverage and codes is None:
        return None
    args = (np.asarray(params, dtype=float), problem.family, problem.fit_intercept,
            inverse if leverage else None, weights_kind)
    if codes is None:
        return engine.reduce(_without_codes, *args, kind=Kind.ROBUST)
    if codes.shape[0] != engine.n_samples:
        raise ValueError(f"groups has {codes.shape[0]} rows; X has {engine.n_samples}.")
    each = fold_ids_by_partition(engine, codes)
    return engine.reduce_each(robust_sums, each, *args, kind=Kind.ROBUST)


def _without_codes(part, params, family, fit_intercept, inverse, weights_kind):
    return robust_sums(part, None, params, family, fit_intercept, inverse, weights_kind)
