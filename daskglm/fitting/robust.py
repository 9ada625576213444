"""The round of the robust covariances beyond HC0 and HC1 (HC2, HC3, cluster-robust):
each row's leverage and the scores summed per cluster, from one ``Kind.ROBUST`` round
(:func:`daskglm.compute.robust.robust_sums`).

Cluster ids in memory are factorised on the driver and their integer codes sent to their
partitions with the round.  Cluster ids given as Dask collections (:class:`DaskClusterIds`)
never reach the driver: they are cut as the partitions are, computed where the partitions
live and kept there as a partition state (one ``compute_state`` round, which brings back
each partition's count of rows and of missing ids), and the round sums each partition's
scores per id (:func:`daskglm.compute.robust.robust_sums_by_id`), its tree merging the
tables by id: only the score sums of the clusters (clusters x parameters) travel.
"""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.robust import (
    MISSING_IDS,
    cluster_codes,
    ids_summary,
    robust_sums,
    robust_sums_by_id,
)
from ..compute.sampling import partition_size
from ..engine.driver_passes import compute_pass
from ..engine.folds import fold_ids_by_partition

__all__ = ["robust_statistics", "DaskClusterIds", "cluster_codes", "MISSING_IDS"]

#: The partition state the cluster ids are kept under during the robust round.
IDS_STATE = "cluster_ids"


class DaskClusterIds:
    """Cluster ids as Dask arrays, read where the rows' partitions live.

    Parameters
    ----------
    columns : list of dask.array.Array
        One or two (two-way clustering) arrays of one id per row, their chunk sizes known.
    """

    def __init__(self, columns):
        self.columns = list(columns)

    @property
    def n_rows(self):
        return self.columns[0].shape[0]

    def by_partition(self, rows):
        """One delayed object per partition of ``rows`` rows: the tuple of its rows' ids
        (one array per clustering); the columns rechunked as the partitions are."""
        import dask

        blocks = [column.rechunk((tuple(int(r) for r in rows),)).to_delayed().ravel()
                  for column in self.columns]
        return [dask.delayed(tuple)(list(parts)) for parts in zip(*blocks)]

    def codes_on_driver(self):
        """The integer codes of :func:`~daskglm.compute.robust.cluster_codes`, the ids
        computed to the driver (one driver pass) for engines that hold no partition
        state."""
        import pandas as pd

        columns = compute_pass(*self.columns)
        if any(bool(pd.isna(column).any()) for column in columns):
            raise ValueError(MISSING_IDS)
        return cluster_codes(columns)


def robust_statistics(engine, problem, params, cov_type, codes, inverse,
                      weights_kind="frequency"):
    """The :class:`~daskglm.compute.robust.RobustStats` of the fit at ``params``
    (solvers' order and the engine's column scale), from one ``Kind.ROBUST`` round (and
    a ``sizes`` round to cut ``codes`` by partition); None when neither HC2, HC3 nor
    clusters are asked for.  ``inverse`` is the inverse expected information at
    ``params``, in the same order and scale; ``weights_kind`` what the row weights
    are; ``codes`` the integer cluster codes of the rows, or a :class:`DaskClusterIds`
    (then also a ``compute_state`` round, which finds missing ids before the round)."""
    leverage = cov_type in ("HC2", "HC3")
    if not leverage and codes is None:
        return None
    args = (np.asarray(params, dtype=float), problem.family, problem.fit_intercept,
            inverse if leverage else None, weights_kind)
    if codes is None:
        return engine.reduce(_without_codes, *args, kind=Kind.ROBUST)
    if isinstance(codes, DaskClusterIds):
        if codes.n_rows != engine.n_samples:
            raise ValueError(f"groups has {codes.n_rows} rows; X has {engine.n_samples}.")
        if getattr(engine, "keeps_states", True):
            return _sums_by_id(engine, codes, args)
        codes = codes.codes_on_driver()
    if codes.shape[0] != engine.n_samples:
        raise ValueError(f"groups has {codes.shape[0]} rows; X has {engine.n_samples}.")
    each = fold_ids_by_partition(engine, codes)
    return engine.reduce_each(robust_sums, each, *args, kind=Kind.ROBUST)


def _sums_by_id(engine, ids, args):
    """The robust round with the cluster ids kept beside the partitions."""
    rows = [engine.n_samples] if engine.n_partitions == 1 else \
        [size[0] for size in engine.map(partition_size, kind=Kind.SIZES)]
    summaries = engine.compute_state(IDS_STATE, ids.by_partition(rows), ids_summary)
    try:
        found = np.asarray(summaries, dtype=np.int64).reshape(-1, 2)
        if found[:, 1].any():
            raise ValueError(MISSING_IDS)
        if not np.array_equal(found[:, 0], rows):
            raise ValueError(f"groups' partitions hold {found[:, 0].tolist()} rows; X's "
                             f"{rows}: a Dask collection's chunk sizes do not match the "
                             "rows its chunks compute to.")
        return engine.reduce_stateful(robust_sums_by_id, IDS_STATE, *args,
                                      kind=Kind.ROBUST).result
    finally:
        engine.drop_state(IDS_STATE)


def _without_codes(part, params, family, fit_intercept, inverse, weights_kind):
    return robust_sums(part, None, params, family, fit_intercept, inverse, weights_kind)
