"""Tables with categorical columns: levels found once, each partition encoded where it
lives (a categorical block, or a CSR matrix), coefficients named ``column[level]``.

A pandas or Dask DataFrame whose columns are numbers, ``category``, strings or booleans
is fitted as is.  At fit, :func:`table_encoding` finds each categorical column's levels:
the dtype's own categories when it knows them, otherwise the column's distinct values.
Each partition is then encoded by :func:`encode_frame`: the numeric columns as they are,
followed by one column per level of each categorical column (never a dense dummy
matrix), as a categorical block
(:class:`~daskglm.compute.categorical_matrix.CategoricalMatrix`: the numeric columns and
each row's level codes) for the fits whose solver reads them (:data:`BLOCK_SOLVERS`), as
a CSR matrix for the others and for prediction.  As glum and H2O do, an unpenalised fit
drops each column's first level (its reference: the intercept carries it, and the
dummies are not collinear with it); a penalised fit keeps every level, so no level is
singled out by the penalty.

Missing values are chosen by the estimator's ``missing``: ``"error"`` (the default) refuses
them, naming the column; ``"mean"`` fills a numeric column's with its mean at fit (kept for
prediction) and gives a categorical column's their own level, :data:`MISSING_LEVEL`, as
H2O does.  A level not seen at fit, met at prediction, gets no column: its rows contribute
nothing from that column, as the reference level's rows do when it was dropped.

A fit on a Dask DataFrame reads it once before the validation round, in one
``driver_pass`` of the fit's ledger: the levels not known, the means, which categorical
columns have gaps, and each partition's rows (the encoded array's chunk sizes), together.
That pass reads only the columns it needs (a parquet source reads no other column).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..compute.categorical_matrix import CategoricalMatrix
from .validation import frame_partitions, partition_rows, projected_partitions

__all__ = ["TableEncoding", "table_encoding", "encode_frame", "categorical_columns",
           "is_table_with_categories", "is_table", "encoded_array", "MISSING_LEVEL",
           "BLOCK_SOLVERS", "check_missing"]

#: The level of a categorical column's missing values with ``missing="mean"``.
MISSING_LEVEL = "(missing)"

#: The solvers whose kernels read categorical blocks
#: (:class:`~daskglm.compute.categorical_matrix.CategoricalMatrix`): a table's fit with
#: one of them (or ``solver="auto"``, which chooses among them) keeps its partitions as
#: blocks; any other solver reads CSR partitions.  Sharded L-BFGS reads CSR.
BLOCK_SOLVERS = ("lbfgs", "newton", "gd", "proximal", "normal")


def check_missing(missing):
    """ValueError unless ``missing`` is ``"error"`` or ``"mean"``."""
    if missing not in ("error", "mean"):
        raise ValueError(f"missing must be 'error' or 'mean'; got {missing!r}.")


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
    means : dict
        ``{column: mean}`` filling the missing values of numeric columns (``missing="mean"``;
        empty otherwise).
    missing_level : bool
        Whether a categorical column's missing values are a level of their own
        (:data:`MISSING_LEVEL`, last); otherwise they are an error.
    """

    columns: tuple
    levels: dict
    drop_first: bool
    means: dict = None
    missing_level: bool = False

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


def table_encoding(frame, drop_first, compute=None, missing="error", with_lengths=False):
    """The :class:`TableEncoding` of ``frame`` (pandas or Dask DataFrame).

    Parameters
    ----------
    frame : pandas.DataFrame or dask.dataframe.DataFrame
    drop_first : bool
        Make each categorical column's first level its reference.
    compute : callable, optional
        Computes Dask collections (``compute(*collections)``), for the columns whose
        dtype does not know its categories and for the means of ``missing="mean"``: the
        estimator's, so that the passes are in the fit's ledger.
    missing : {"error", "mean"}
        What missing values become (see the module's docstring).
    with_lengths : bool
        Also return the rows of each partition of a Dask ``frame`` (None for pandas),
        counted in the same pass as the levels and means, for :func:`encoded_array`.

    Returns
    -------
    TableEncoding, or ``(TableEncoding, lengths)`` with ``with_lengths``

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
    check_missing(missing)
    levels, unknown = {}, []
    for column in categorical:
        known = known_levels(frame[column])
        if known is not None:
            levels[column] = np.asarray(known)
        else:
            unknown.append(column)
    # one pass for all that must be read: unknown levels, and with missing="mean" the
    # numeric columns' sums and counts and which categorical columns have gaps; a Dask
    # frame's partitions are counted in the same pass
    numeric = [c for c in frame.columns if c not in categorical]
    with_means = missing == "mean"
    lengths = None
    if hasattr(frame, "__dask_graph__") and not (unknown or with_means or with_lengths):
        summaries = []  # nothing to read
    elif hasattr(frame, "__dask_graph__"):
        import dask

        read = unknown + (numeric + categorical if with_means else [])
        parts = projected_partitions(frame, read)
        wanted = [dask.delayed(_summary, pure=True)(part, unknown, numeric, categorical,
                                                    with_means) for part in parts]
        summaries = (compute or dask.compute)(*wanted)
        lengths = [summary[0] for summary in summaries]
    else:
        summaries = [_summary(frame, unknown, numeric, categorical, with_means)]
    for k, column in enumerate(unknown):
        found = np.concatenate([summary[1][k] for summary in summaries])
        levels[column] = np.asarray(sorted(pd.unique(found), key=_order))
    means = {}
    if with_means:
        sums = np.sum([summary[2] for summary in summaries], axis=0)
        counts = np.sum([summary[3] for summary in summaries], axis=0)
        gaps = np.any([summary[4] for summary in summaries], axis=0)
        empty = [str(c) for c, count in zip(numeric, counts) if not count]
        if empty:
            raise ValueError(f"Numeric column(s) {empty} have no values to take a mean of.")
        means = {str(c): float(total / count) for c, total, count in zip(numeric, sums, counts)}
        for column, gap in zip(categorical, gaps):
            if gap:
                levels[column] = np.append(levels[column].astype(object), MISSING_LEVEL)
    for column in categorical:
        if drop_first and len(levels[column]) < 2:
            raise ValueError(f"Column {column!r} has one level ({levels[column].tolist()}); "
                             "its dummy would be the intercept. Drop the column.")
    encoding = TableEncoding(tuple(columns), {str(c): levels[c] for c in categorical},
                             bool(drop_first), means, missing == "mean")
    if not with_lengths:
        return encoding
    return encoding, lengths


def known_levels(column):
    """The categories a pandas or Dask Series's dtype holds, or None when it holds none
    (not a category, or a Dask category whose categories are not known yet)."""
    import pandas as pd

    dtype = column.dtype
    if not isinstance(dtype, pd.CategoricalDtype):
        return None
    if hasattr(column, "cat") and not getattr(column.cat, "known", True):
        return None
    return list(dtype.categories)


def _summary(part, unknown, numeric, categorical, with_means):
    """What :func:`table_encoding` reads of one partition (pandas): its rows, the distinct
    values of the ``unknown`` columns, and with ``with_means`` the ``numeric`` columns'
    sums and counts of values and whether each ``categorical`` column has a gap."""
    distinct = [np.asarray(part[c].dropna().unique(), dtype=object) for c in unknown]
    if not with_means:
        return len(part), distinct, None, None, None
    values = part[numeric]
    return (len(part), distinct, values.sum().to_numpy(dtype=np.float64),
            values.count().to_numpy(dtype=np.float64),
            part[categorical].isna().any().to_numpy(dtype=bool))


def distinct_values(column):
    """The distinct non-missing values of a pandas or Dask Series: for Dask, each
    partition's, collected (no shuffle), to be made unique on the driver."""
    if hasattr(column, "__dask_graph__"):
        return column.map_partitions(_partition_distinct, meta=column._meta)
    return column.dropna().unique()


def _partition_distinct(part):
    return part.dropna().drop_duplicates()


def _order(value):
    return (type(value).__name__, value)


def encode_frame(frame, encoding, dtype=np.float64, layout="csr"):
    """One partition (a pandas DataFrame) as the matrix of ``encoding``'s features.

    With ``layout="csr"``, a CSR matrix written in one compiled pass
    (:func:`~daskglm.compute.table_loops.table_csr`) from each row's entries: its numeric
    values other than zero, then one 1 per categorical column whose level has a column,
    so each row's column indices are sorted.  With ``layout="blocks"``, a categorical
    block (:class:`~daskglm.compute.categorical_matrix.CategoricalMatrix`): the numeric
    columns as a dense array and each row's level columns, the same features.  A
    categorical column's levels are matched on its categories or its distinct values,
    not row by row.

    Raises
    ------
    ValueError
        For a missing value in a categorical column.
    """
    frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
    n = len(frame)
    numbers = np.empty((n, 0), dtype=dtype)
    if encoding.numeric:
        # nullable integer, float and boolean columns too: their missing values are NaN
        numbers = frame[list(encoding.numeric)].to_numpy(dtype=dtype, na_value=np.nan)
        numbers = numbers.reshape(n, -1)
        if encoding.means:
            means = np.array([encoding.means[c] for c in encoding.numeric], dtype=dtype)
            numbers = np.where(np.isnan(numbers), means, numbers)
    width = numbers.shape[1]
    index = np.int32 if encoding.n_features < np.iinfo(np.int32).max else np.int64
    columns = np.empty((n, len(encoding.levels)), dtype=index)
    for k, (column, levels) in enumerate(encoding.levels.items()):
        codes = _level_codes(frame[column], levels, encoding.missing_level, column)
        if encoding.drop_first:
            codes = codes - 1  # the reference level, code 0, has no column: -1 as unseen
        columns[:, k] = np.where(codes >= 0, width + codes, -1)
        width += len(encoding.kept_levels(column))
    matrix = CategoricalMatrix(np.ascontiguousarray(numbers), columns, width)
    if layout == "blocks":
        return matrix
    if layout != "csr":
        raise ValueError(f"layout must be 'csr' or 'blocks'; got {layout!r}.")
    return matrix.tocsr()


def _level_codes(values, levels, missing_level, column):
    """Each row's position in ``levels`` (-1 for a level not among them) of the pandas
    Series ``values``; a missing value is :data:`MISSING_LEVEL`'s position, or an error
    when it is not a level."""
    import pandas as pd

    if isinstance(values.dtype, pd.CategoricalDtype):
        raw, found = values.cat.codes.to_numpy(), values.cat.categories
    else:
        raw, found = pd.factorize(values)
    missing = raw < 0
    positions = pd.Index(levels).get_indexer(found)
    codes = positions[np.maximum(raw, 0)] if len(positions) else np.full(len(raw), -1)
    codes = codes.astype(np.int64)
    if missing.any():
        if not missing_level:
            raise ValueError(f"Column {column!r} has missing values; fill them (or drop "
                             "those rows), or fit with missing='mean' (a level of their own).")
        codes[missing] = pd.Index(levels).get_loc(MISSING_LEVEL)
    return codes


def is_table_with_categories(X):
    """Whether ``X`` is a pandas or Dask DataFrame with a categorical or string column."""
    return is_table(X) and bool(categorical_columns(X))


def is_table(X):
    """Whether ``X`` is a pandas or Dask DataFrame."""
    return hasattr(X, "dtypes") and hasattr(X, "columns")


def encoded_array(frame, encoding, dtype=np.float64, compute=None, lengths=None,
                  layout="csr"):
    """``frame`` encoded (:func:`encode_frame` in ``layout``): a matrix (pandas) or a Dask
    array of one chunk per partition (Dask; ``compute`` computes the partitions' lengths,
    a pass, unless ``lengths`` gives them).

    A Dask array of categorical blocks (``layout="blocks"``) is for the engine's
    partitions: Dask joins and slices its chunks by rows, and no other numpy function
    takes them.
    """
    if not hasattr(frame, "__dask_graph__"):
        return encode_frame(frame, encoding, dtype, layout)
    import dask
    import dask.array as da

    parts = frame_partitions(frame)
    if lengths is None:
        lengths = partition_rows(projected_partitions(frame, []), compute)
    if len(lengths) != len(parts):
        raise RuntimeError(f"{len(lengths)} partition lengths for {len(parts)} partitions.")
    encode = dask.delayed(encode_frame, pure=True)
    meta = sp.csr_matrix((0, encoding.n_features), dtype=dtype)
    if layout == "blocks":
        meta = _empty_blocks(encoding, dtype)
    blocks = [da.from_delayed(encode(part, encoding, dtype, layout),
                              shape=(int(rows), encoding.n_features), dtype=dtype, meta=meta)
              for part, rows in zip(parts, lengths)]
    return da.concatenate(blocks, axis=0)


def _empty_blocks(encoding, dtype):
    return CategoricalMatrix(np.empty((0, len(encoding.numeric)), dtype=dtype),
                             np.empty((0, len(encoding.levels)), dtype=np.int32),
                             encoding.n_features)
