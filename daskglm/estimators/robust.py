"""Robust covariances beyond HC0 and HC1: HC2, HC3 and cluster-robust (one-way and
two-way), as statsmodels' ``fit(cov_type=..., cov_kwds=...)`` computes them.

The estimator's ``cov_type`` chooses the covariance of ``bse_``, ``pvalues_``,
:meth:`summary` and :meth:`conf_int` by default; ``fit(X, y, groups=...)`` gives the
clusters.  HC2 and HC3 need each row's leverage, so they cost one more round after the
inference round (:func:`daskglm.fitting.robust.robust_statistics`, ``Kind.ROBUST``), run only
when ``cov_type`` asks for one of them; the same round sums the scores per cluster when
``groups`` are given.  The group ids are factorised on the driver (a Dask collection of
them is read there first, in one driver pass) and each partition receives the integer
codes of its rows with the round; ``X`` never leaves the workers.
"""

from __future__ import annotations

import numpy as np

from ..engine import is_dask
from ..engine.driver_passes import compute_pass

__all__ = ["COV_TYPES", "check_cov_options", "checked_groups", "robust_covariances",
           "covariance_kind"]

#: The values of ``cov_type``; ``"nonrobust"`` is :meth:`cov_params`' ``"model"``.
COV_TYPES = ("nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster")

#: The keys of ``cov_kwds`` and their defaults (statsmodels' for ``cov_type="cluster"``).
COV_KWDS = {"use_correction": True, "df_correction": True}

_ROBUST_DOC = """    cov_type : {"nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster"}, default="nonrobust"
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
    """The cluster codes of ``fit(..., groups=...)``: int64 of shape (rows, 1) for one
    clustering, (rows, 3) for two (the second, the first, their intersection, as
    statsmodels' two-way clustering combines them), or None without groups.

    ``groups`` is a sequence, numpy array, pandas Series or DataFrame, Dask array, Series
    or DataFrame of one id per row (or two: two columns, or a tuple of two sequences).
    A ValueError, before any pass over ``X``, for groups without ``inference=True`` or
    ``cov_type="cluster"`` without groups, for a length that is not ``X``'s, for more
    than two clusterings and for missing ids.
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
    columns = _group_columns(groups, n_rows)
    for column in columns:
        if not np.isnan(n_rows) and len(column) != n_rows:
            raise ValueError(f"groups has {len(column)} rows; X has {n_rows:.0f}.")
        if _missing(column):
            raise ValueError("groups contains missing ids (NaN or None); every row needs "
                             "its cluster.")
    codes = [_factorised(column) for column in columns]
    if len(codes) == 2:
        codes = [codes[0], codes[1], _factorised(codes[0] * (codes[1].max() + 1) + codes[1])]
    return np.column_stack(codes)


def _group_columns(groups, n_rows):
    """The id columns of ``groups`` (one or two), as numpy or pandas values; a Dask
    collection read in one driver pass, after its known length is checked."""
    if isinstance(groups, tuple) and len(groups) == 2:
        return [column for group in groups for column in _group_columns(group, n_rows)]
    if is_dask(groups):
        length = groups.shape[0] if hasattr(groups, "ndim") and hasattr(groups, "chunks") \
            else np.nan
        if not np.isnan(length) and not np.isnan(n_rows) and length != n_rows:
            raise ValueError(f"groups has {length} rows; X has {n_rows:.0f}.")
        groups = compute_pass(groups)[0]
    if hasattr(groups, "iloc"):  # pandas
        if groups.ndim == 1:
            return [groups.to_numpy()]
        columns = [groups.iloc[:, j].to_numpy() for j in range(groups.shape[1])]
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


def _factorised(column):
    import pandas as pd

    return pd.factorize(column, sort=True)[0].astype(np.int64)


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
