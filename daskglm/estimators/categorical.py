"""Tables with categorical columns: levels found once, each partition one-hot encoded into
a CSR matrix where it lives, coefficients named ``column[level]``.

A pandas or Dask DataFrame whose columns are numbers, ``category``, strings or booleans
is fitted as is.  At fit, :func:`table_encoding` finds each categorical column's levels:
the dtype's own categories when it knows them, otherwise one pass over the column (a
``driver_pass`` in the fit's ledger).  Each partition is then encoded by
:func:`encode_frame`: the numeric columns as they are, followed by one column per level of
each categorical column, in one CSR matrix (never a dense dummy matrix).  As glum and H2O
do, an unpenalised fit drops each column's first level (its reference: the intercept
carries it, and the dummies are not collinear with it); a penalised fit keeps every level,
so no level is singled out by the penalty.

Missing values in a categorical column are an error at fit and at prediction.  A level
not seen at fit, met at prediction, gets no column: its rows contribute nothing from that
column, as the reference level's rows do when it was dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["TableEncoding", "table_encoding", "encode_frame", "categorical_columns",
           "is_table_with_categories", "encoded_array"]


@dataclass(frozen=True)
class TableEncoding:
    """How a table's columns become the model's features.

    Attributes
    ----------
    columns : tuple of str
        The table's columns, in order.
    levels : dict
        ``{column: levels}`` of the categorical columns, each an ndarray of its levels at
        fit (sorted, unless the dtype gave its own order).
    drop_first : bool
        Whether each categorical column's first level is the reference (no column).
    """

    columns: tuple
    levels: dict
    drop_first: bool

    @property
    def numeric(self):
        """The numeric columns, in order: the first features."""
        return tuple(c for c in self.columns if c not in self.levels)

    def kept_levels(self, column):
        """The levels of ``column`` that have a feature of their own."""
        levels = self.levels[column]
        return levels[1:] if self.drop_first else levels

    @property
    def feature_names_out(self):
        """The model's features: the numeric columns, then ``column[level]``."""
        names = list(self.numeric)
        for column in self.levels:
            names += [f"{column}[{level}]" for level in self.kept_levels(column)]
        return np.asarray(names, dtype=object)

    @property
    def n_features(self):
        return len(self.numeric) + sum(len(self.kept_levels(c)) for c in self.levels)


def categorical_columns(frame):
    """The columns of ``frame`` (pandas or Dask) holding categories or strings (booleans
    are numbers, 0 and 1, as in scikit-learn)."""
    import pandas as pd

    found = []
    for column, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_object_dtype(dtype) \
                or pd.api.types.is_string_dtype(dtype):
            found.append(column)
    return found


def table_encoding(frame, drop_first, compute=None):
    """The :class:`TableEncoding` of ``frame`` (pandas or Dask DataFrame).

    Parameters
    ----------
    frame : pandas.DataFrame or dask.dataframe.DataFrame
    drop_first : bool
        Make each categorical column's first level its reference.
    compute : callable, optional
        Computes Dask collections (``compute(*collections)``), for the columns whose
        dtype does not know its categories: the estimator's, so that the pass is in the
        fit's ledger.

    Raises
    ------
    ValueError
        For a categorical column with a missing value, or with one level only when it is
        dropped (the column would have no feature).
    """
    import pandas as pd

    columns = [str(c) for c in frame.columns]
    if len(set(columns)) != len(columns):
        raise ValueError(f"The table's column names must be unique; got {columns}.")
    categorical = categorical_columns(frame)
    levels, unknown = {}, []
    for column in categorical:
        dtype = frame[column].dtype
        known = isinstance(dtype, pd.CategoricalDtype) and (
            not hasattr(frame[column], "cat") or getattr(frame[column].cat, "known", True))
        if known:
            levels[column] = np.asarray(dtype.categories)
        else:
            unknown.append(column)
    if unknown:
        distinct = [frame[c].dropna().unique() for c in unknown]
        values = compute(*distinct) if hasattr(distinct[0], "__dask_graph__") else distinct
        for column, found in zip(unknown, values):
            levels[column] = np.asarray(sorted(pd.unique(np.asarray(found)), key=_order))
    for column in categorical:
        if drop_first and len(levels[column]) < 2:
            raise ValueError(f"Column {column!r} has one level ({levels[column].tolist()}); "
                             "its dummy would be the intercept. Drop the column.")
    return TableEncoding(tuple(columns), {str(c): levels[c] for c in categorical},
                         bool(drop_first))


def _order(value):
    return (type(value).__name__, value)


def encode_frame(frame, encoding, dtype=np.float64):
    """One partition (a pandas DataFrame) as the CSR matrix of ``encoding``'s features.

    Raises
    ------
    ValueError
        For a missing value in a categorical column.
    """
    import pandas as pd

    frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
    n = len(frame)
    blocks = []
    if encoding.numeric:
        values = frame[list(encoding.numeric)].to_numpy(dtype=dtype)
        blocks.append(sp.csr_matrix(values))
    for column, levels in encoding.levels.items():
        values = frame[column]
        missing = values.isna().to_numpy()
        if missing.any():
            raise ValueError(f"Column {column!r} has missing values; fill them (or drop "
                             "those rows) before fitting or predicting.")
        codes = pd.Index(levels).get_indexer(values.to_numpy()).astype(np.int64)  # -1: unseen
        width = len(encoding.kept_levels(column))
        if encoding.drop_first:
            codes = codes - 1  # the reference level, code 0, has no column: -1 as unseen
        rows = np.flatnonzero(codes >= 0)
        blocks.append(sp.csr_matrix((np.ones(rows.size, dtype=dtype), (rows, codes[rows])),
                                    shape=(n, width)))
    if not blocks:
        return sp.csr_matrix((n, 0), dtype=dtype)
    return sp.hstack(blocks, format="csr", dtype=dtype)


def is_table_with_categories(X):
    """Whether ``X`` is a pandas or Dask DataFrame with a categorical or string column."""
    return hasattr(X, "dtypes") and hasattr(X, "columns") and bool(categorical_columns(X))


def encoded_array(frame, encoding, dtype=np.float64, compute=None):
    """``frame`` encoded: a CSR matrix (pandas) or a Dask array of CSR chunks, one per
    partition (Dask; ``compute`` computes the partitions' lengths, a pass)."""
    if not hasattr(frame, "__dask_graph__"):
        return encode_frame(frame, encoding, dtype)
    import dask
    import dask.array as da

    compute = compute or dask.compute
    lengths = compute(frame.map_partitions(len))[0]
    encode = dask.delayed(encode_frame, pure=True)
    meta = sp.csr_matrix((0, encoding.n_features), dtype=dtype)
    blocks = [da.from_delayed(encode(part, encoding, dtype), shape=(int(rows), encoding.n_features),
                              dtype=dtype, meta=meta)
              for part, rows in zip(frame.to_delayed(), lengths)]
    return da.concatenate(blocks, axis=0)
