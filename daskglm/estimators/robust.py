"""Robust covariances beyond HC0 and HC1: HC2, HC3 and cluster-robust (one-way and
two-way), as statsmodels' ``fit(cov_type=..., cov_kwds=...)`` computes them.

The estimator's ``cov_type`` chooses the covariance of ``bse_``, ``pvalues_``,
:meth:`summary` and :meth:`conf_int` by default; ``fit(X, y, groups=...)`` gives the
clusters.  HC2 and HC3 need each row's leverage, so they cost one more round after the
inference round (:func:`daskglm.fitting.robust.robust_statistics`, ``Kind.ROBUST``), run only
when ``cov_type`` asks for one of them; the same round sums the scores per cluster when
``groups`` are given.  Group ids in memory are factorised on the driver and each
partition receives the integer codes of its rows with the round.  Group ids given as
Dask collections stay on the workers (:class:`~daskglm.fitting.robust.DaskClusterIds`):
each partition sums its scores per id and the round's tree merges the sums by id; their
length is checked before any pass (from known chunk sizes, or counted in one driver pass
over the ids alone), missing ids just before the round.  ``X`` never leaves the workers.
"""

from __future__ import annotations

import numpy as np

from ..engine import is_dask
from ..engine.driver_passes import with_known_rows
from ..fitting.robust import MISSING_IDS, DaskClusterIds, cluster_codes

__all__ = ["COV_TYPES", "check_cov_options", "checked_groups", "robust_covariances",
           "covariance_kind", "ROBUST_DOC"]

#: The values of ``cov_type``; ``"nonrobust"`` is :meth:`cov_params`' ``"model"``.
COV_TYPES = ("nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster")

#: The keys of ``cov_kwds`` and their defaults (statsmodels' for ``cov_type="cluster"``).
COV_KWDS = {"use_correction": True, "df_correction": True}

#: The ``cov_type`` and ``cov_kwds`` parameters, for the ``Parameters`` section.
ROBUST_DOC = """    cov_type : {"nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster"}, default="nonrobust"
        With ``inference=True``, the covariance of ``bse_``, ``zvalues_``, ``pvalues_``
        and, by default, of :meth:`cov_params`, :meth:`conf_int` and :meth:`summary`
        (statsmodels' ``fit(cov_type=...)``).  ``"HC2"`` and ``"HC3"`` cost one more
        round after the fit (each row's leverage); ``"cluster"`` needs
        ``fit(..., groups=...)``.
    cov_kwds : dict, optional
        For the cluster-robust covariance, as statsmodels' ``cov_kwds``:
        ``use_correction`` (default True: the factor ``G / (G - 1) (n - 1) / (n - k)``)
        and ``df_correction`` (default True: Student's t on ``G - 1`` degrees of
        freedom when ``use_t=True``, ``G`` the fewest clusters of a clustering).
"""


def covariance_kind(value):
    """The key of :meth:`cov_params` of a ``cov_type`` or ``kind``: ``"nonrobust"`` is
    ``"model"``."""
    return "model" if value == "nonrobust" else value


def check_cov_options(estimator):
    """ValueError (before any work) for a ``cov_type`` or ``cov_kwds`` that is not one of
    :data:`COV_TYPES` and :data:`COV_KWDS`, or that asks for a robust covariance without
    ``inference=True``; returns the ``cov_kwds`` with their defaults."""
    cov_type = getattr(estimator, "cov_type", "nonrobust")
    if cov_type not in COV_TYPES:
        raise ValueError(f"cov_type must be one of {list(COV_TYPES)}; got {cov_type!r}.")
    if cov_type != "nonrobust" and not getattr(estimator, "inference", False):
        raise ValueError(f"cov_type={cov_type!r} needs inference=True (the covariances are "
                         "computed after the fit).")
    kwds = getattr(estimator, "cov_kwds", None)
    if kwds is None:
        return dict(COV_KWDS)
    if not isinstance(kwds, dict) or set(kwds) - set(COV_KWDS):
        raise ValueError(f"cov_kwds must be a dict with keys among {sorted(COV_KWDS)}; "
                         f"got {kwds!r}.")
    for name, value in kwds.items():
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"cov_kwds[{name!r}] must be True or False; got {value!r}.")
    return {**COV_KWDS, **kwds}


def checked_groups(estimator, groups, n_rows):
    """The clusters of ``fit(..., groups=...)``: for ids in memory, their codes, int64 of
    shape (rows, 1) for one clustering, (rows, 3) for two (the first, the second, their
    intersection, as statsmodels' two-way clustering combines them); for Dask ids, a
    :class:`~daskglm.fitting.robust.DaskClusterIds` of them, nothing computed but their
    chunk sizes where unknown; None without groups.

    ``groups`` is a sequence, numpy array, pandas Series or DataFrame, Dask array, Series
    or DataFrame of one id per row (or two: two columns, or a tuple of two sequences).
    A ValueError, before any pass over ``X``, for groups without ``inference=True`` or
    ``cov_type="cluster"`` without groups, for a length that is not ``X``'s, for more
    than two clusterings and for missing ids (those of Dask ids are found before the
    robust round, where the ids are).
    """
    cov_type = getattr(estimator, "cov_type", "nonrobust")
    if groups is None:
        if cov_type == "cluster":
            raise ValueError("cov_type='cluster' needs the clusters: fit(X, y, groups=...).")
        return None
    if not getattr(estimator, "inference", False):
        raise ValueError("groups are the clusters of a cluster-robust covariance: they need "
                         "inference=True (and an unpenalised fit).")
    n_rows = float(n_rows)
    columns = _group_columns(groups)
    if any(is_dask(column) for column in columns):
        return _dask_ids(columns, n_rows)
    for column in columns:
        _check_length(len(column), n_rows)
        if _missing(column):
            raise ValueError(MISSING_IDS)
    return cluster_codes(columns)


def _check_length(length, n_rows):
    if not np.isnan(length) and not np.isnan(n_rows) and length != n_rows:
        raise ValueError(f"groups has {length:.0f} rows; X has {n_rows:.0f}.")


def _dask_ids(columns, n_rows):
    """The id columns as Dask arrays of known chunk sizes (counted in one driver pass
    where unknown, after the known lengths are checked)."""
    import dask.array as da

    arrays = []
    for column in columns:
        if not is_dask(column):
            column = da.from_array(np.asarray(column), chunks=-1)
        elif not hasattr(column, "chunks"):  # a Dask Series: one chunk per partition
            column = _series_as_array(column)
        _check_length(column.shape[0], n_rows)
        arrays.append(column)
    arrays = [with_known_rows(column) for column in arrays]
    for column in arrays:
        _check_length(column.shape[0], n_rows)
    return DaskClusterIds(arrays)


def _series_as_array(series):
    """A Dask Series as a Dask array of its values, one chunk of unknown size per
    partition (pandas' extension dtypes, text among them, as numpy's object)."""
    import dask
    import dask.array as da

    dtype = series._meta.to_numpy().dtype
    values = dask.delayed(_values, pure=True)
    return da.concatenate([da.from_delayed(values(part), shape=(np.nan,), dtype=dtype)
                           for part in series.to_delayed()])


def _values(part):
    return part.to_numpy()


def _group_columns(groups):
    """The id columns of ``groups`` (one or two): numpy or pandas values, or Dask
    arrays and Series."""
    if isinstance(groups, tuple) and len(groups) == 2:
        return [column for group in groups for column in _group_columns(group)]
    if is_dask(groups) or hasattr(groups, "iloc"):  # Dask or pandas
        if groups.ndim not in (1, 2):
            raise ValueError(f"groups must have one id per row, or two; got shape "
                             f"{groups.shape}.")
        if groups.ndim == 1:
            return [groups if is_dask(groups) else groups.to_numpy()]
        if hasattr(groups, "columns"):
            columns = [groups[name] for name in groups.columns]
            if not is_dask(groups):
                columns = [column.to_numpy() for column in columns]
        else:
            columns = [groups[:, j] for j in range(groups.shape[1])]
    else:
        values = np.asarray(groups)
        if values.ndim == 1:
            return [values]
        if values.ndim != 2:
            raise ValueError(f"groups must have one id per row, or two; got shape "
                             f"{values.shape}.")
        columns = [values[:, j] for j in range(values.shape[1])]
    if not 1 <= len(columns) <= 2:
        raise ValueError(f"groups can hold one or two clusterings (columns); got "
                         f"{len(columns)}.")
    return columns


def _missing(column):
    import pandas as pd

    return bool(pd.isna(column).any())


def robust_covariances(stats, order, bread, rows, cov_kwds):
    """``(covariances, degrees of freedom)`` of HC2, HC3 and ``"cluster"``, as they were
    computed, by kind: sandwiches ``bread @ meat @ bread`` with ``bread`` the inverse
    observed information (the parameters in ``order``, as the meats are put), and the
    cluster's Student's t degrees of freedom."""
    if stats is None:
        return {}, {}
    k = bread.shape[0]
    covariances, dfs = {}, {}
    if stats.hc2 is not None:
        for kind, meat in (("HC2", stats.hc2), ("HC3", stats.hc3)):
            covariances[kind] = bread @ meat[np.ix_(order, order)] @ bread
    if stats.tables:
        terms = []
        for table in stats.tables:
            cov = bread @ table.meat()[np.ix_(order, order)] @ bread
            if cov_kwds["use_correction"]:
                g = table.n_clusters
                cov = cov * (g / max(g - 1.0, 1.0)) * ((rows - 1.0) / max(rows - k, 1.0))
            terms.append(cov)
        # two-way (Cameron, Gelbach and Miller): first + second - intersection
        covariances["cluster"] = terms[0] if len(terms) == 1 \
            else terms[0] + terms[1] - terms[2]
        if cov_kwds["df_correction"]:
            fewest = min(table.n_clusters for table in stats.tables[:2])
            dfs["cluster"] = float(fewest - 1)
    return covariances, dfs
