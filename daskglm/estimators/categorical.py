"""Tables with categorical columns: levels found once, each partition encoded where it
lives (a categorical block, or a CSR matrix), coefficients named ``column[level]``.

A pandas or Dask DataFrame whose columns are numbers, ``category``, strings or booleans
is fitted as is.  At fit, :func:`read_table` finds each categorical column's levels: the
dtype's own categories when it knows them, otherwise the column's distinct values.
Each partition is then encoded (:func:`encode_frame`): the numeric columns as they are,
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

A fit on a Dask DataFrame reads it once (:func:`read_table`): each partition is read
(:func:`read_partition`) and kept where it was read, and the levels not known, the means,
which categorical columns have gaps and each partition's rows (the encoded array's chunk
sizes) come from those reads; the partitions the fit validates are encoded from the kept
reads (:func:`encode_read`).  A table too large to keep is read by a pass over the columns
it needs (:func:`table_encoding`; a parquet source reads no other column), then read again
by the fit.  Each read is a ``driver_pass`` of the fit's ledger.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..compute.categorical_matrix import CategoricalMatrix
from ..engine.cache import CACHE_SAFETY, free_memory
from ..engine.driver_passes import compute_pass, keep_pass
from .validation import frame_partitions, partition_rows, projected_partitions

__all__ = ["TableEncoding", "table_encoding", "read_table", "ReadPartition",
           "read_partition", "encode_frame", "encode_read", "categorical_columns",
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
    means: dict | None = None
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
        For a categorical column with a missing value (one the pass reads), or with one
        level only when it is dropped (the column would have no feature).
    """
    table = _TableColumns(frame, missing)
    lengths = None
    if hasattr(frame, "__dask_graph__") and not (table.unknown or table.with_means
                                                 or with_lengths):
        summaries = []  # nothing to read
    elif hasattr(frame, "__dask_graph__"):
        import dask

        read = table.unknown + (table.numeric + table.categorical if table.with_means else [])
        parts = projected_partitions(frame, read)
        wanted = [dask.delayed(_summary, pure=True)(part, table.unknown, table.numeric,
                                                    table.categorical, table.with_means)
                  for part in parts]
        summaries = (compute or dask.compute)(*wanted)
        lengths = [summary.rows for summary in summaries]
    else:
        summaries = [_summary(frame, table.unknown, table.numeric, table.categorical,
                              table.with_means)]
    encoding = table.encoding(summaries, drop_first)
    if not with_lengths:
        return encoding
    return encoding, lengths


def read_table(frame, drop_first, missing="error", cache="auto", client=None):
    """Find a table's :class:`TableEncoding` in one read of it that keeps what it read.

    Each partition is read once (:func:`read_partition`) and kept where it was read (on
    its worker, or in this process): the levels, means and rows come from those reads,
    and :func:`encoded_array` encodes the kept reads, so the fit's validation round reads
    them, not the source.  With ``cache="auto"``, the first partitions are read first,
    one per worker thread: the others are kept only when every partition's read, at
    their mean size, fits twice (the reads beside the encoded partitions) in the share
    of free memory the engine's cache keeps data in
    (:data:`~daskglm.engine.cache.CACHE_SAFETY`); otherwise, as with ``cache="none"``,
    nothing is kept and :func:`table_encoding` reads only the columns it needs, the fit
    then reading the source again.  Each read is a driver pass of the fit's ledger.

    Parameters
    ----------
    frame : pandas.DataFrame or dask.dataframe.DataFrame
    drop_first : bool
        Make each categorical column's first level its reference.
    missing : {"error", "mean"}
    cache : {"auto", "memory", "none"}
        The fit's cache policy.
    client : distributed.Client, optional
        Where the reads are kept (this process without one).

    Returns
    -------
    encoding : TableEncoding
    lengths : list of int or None
        The rows of each partition (None for pandas).
    kept : list or None
        Each partition's :class:`ReadPartition` (a future of one with ``client``), for
        :func:`encoded_array`; None when nothing was kept.

    Raises
    ------
    ValueError
        For a categorical column with a missing value, or with one level only when it is
        dropped.
    """
    table = _TableColumns(frame, missing)
    reader = functools.partial(read_partition, numeric=table.numeric,
                               categorical=table.categorical)
    summarise = functools.partial(_read_summary, unknown=table.unknown_positions,
                                  with_means=table.with_means, categorical=table.categorical)
    if not hasattr(frame, "__dask_graph__"):
        read = reader(frame)
        return table.encoding([summarise(read)], drop_first), None, [read]
    if cache == "none":
        encoding, lengths = table_encoding(frame, drop_first, compute_pass, missing, True)
        return encoding, lengths, None
    import dask

    reads = [dask.delayed(reader, pure=True)(part) for part in frame_partitions(frame)]
    first = _threads(client) if cache == "auto" else len(reads)
    kept, summaries = keep_pass(reads[:first], summarise, client)
    if first < len(reads):
        per_partition = np.mean([s.nbytes + 16 * s.rows for s in summaries])
        if 2 * len(reads) * per_partition > CACHE_SAFETY * free_memory(client):
            del kept  # the first reads are released: the fit reads the table again
            encoding, lengths = table_encoding(frame, drop_first, compute_pass, missing,
                                               True)
            return encoding, lengths, None
        more, more_summaries = keep_pass(reads[first:], summarise, client)
        kept, summaries = kept + more, summaries + more_summaries
    encoding = table.encoding(summaries, drop_first)
    return encoding, [summary.rows for summary in summaries], kept


def _threads(client):
    """Worker threads of ``client`` (this process's threads without one)."""
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


class _TableColumns:
    """A table's columns as :func:`table_encoding` and :func:`read_table` read them, and
    the encoding made of what they found."""

    def __init__(self, frame, missing):
        columns = [str(c) for c in frame.columns]
        if len(set(columns)) != len(columns):
            raise ValueError(f"The table's column names must be unique; got {columns}.")
        check_missing(missing)
        self.columns = tuple(columns)
        self.with_means = missing == "mean"
        categorical = categorical_columns(frame)
        self.categorical = [str(c) for c in categorical]
        self.numeric = [str(c) for c in frame.columns if c not in categorical]
        self.levels, self.unknown = {}, []
        for column, name in zip(categorical, self.categorical):
            known = known_levels(frame[column])
            if known is not None:
                self.levels[name] = np.asarray(known)
            else:
                self.unknown.append(name)
        self.unknown_positions = [self.categorical.index(c) for c in self.unknown]

    def encoding(self, summaries, drop_first):
        """The :class:`TableEncoding` of the partitions' :class:`_Summary` s."""
        import pandas as pd

        levels = dict(self.levels)
        for k, column in enumerate(self.unknown):
            found = np.concatenate([summary.distinct[k] for summary in summaries])
            levels[column] = np.asarray(sorted(pd.unique(found), key=_order))
        gaps = {}
        for summary in summaries:
            for column, gap in summary.gaps.items():
                gaps[column] = gaps.get(column, False) or gap
        means = {}
        if self.with_means:
            sums = np.sum([summary.sums for summary in summaries], axis=0)
            counts = np.sum([summary.counts for summary in summaries], axis=0)
            empty = [c for c, count in zip(self.numeric, counts) if not count]
            if empty:
                raise ValueError(f"Numeric column(s) {empty} have no values to take a mean "
                                 "of.")
            means = {c: float(total / count)
                     for c, total, count in zip(self.numeric, sums, counts)}
            for column in self.categorical:
                if gaps.get(column):
                    levels[column] = np.append(levels[column].astype(object), MISSING_LEVEL)
        else:
            for column in self.categorical:
                if gaps.get(column):
                    raise _missing_error(column)
        for column in self.categorical:
            if drop_first and len(levels[column]) < 2:
                raise ValueError(f"Column {column!r} has one level "
                                 f"({levels[column].tolist()}); its dummy would be the "
                                 "intercept. Drop the column.")
        return TableEncoding(self.columns, {c: levels[c] for c in self.categorical},
                             bool(drop_first), means, self.with_means)


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


class _Summary(NamedTuple):
    """What the table's pass finds in one partition."""

    rows: int
    distinct: list  # the levels found of each column whose levels are not known
    sums: np.ndarray  # of each numeric column's values (with_means), else None
    counts: np.ndarray  # of each numeric column's values (with_means), else None
    gaps: dict  # {categorical column read: whether it has a missing value}
    nbytes: int  # of the partition as read


def _summary(part, unknown, numeric, categorical, with_means):
    """What :func:`table_encoding` reads of one partition (pandas): its rows, the distinct
    values of the ``unknown`` columns, whether each has a gap, and with ``with_means``
    the ``numeric`` columns' sums and counts of values and whether each ``categorical``
    column has a gap (a :class:`_Summary`)."""
    names = [str(c) for c in part.columns]
    read_numeric = [c for c in numeric if c in names] if with_means else []
    read_categorical = [c for c in categorical if c in names]
    read = read_partition(part, read_numeric, read_categorical)
    return _read_summary(read, [read_categorical.index(c) for c in unknown], with_means,
                         read_categorical)


def _read_summary(read, unknown, with_means, categorical):
    """The :class:`_Summary` of a :class:`ReadPartition`: ``unknown``, the positions of
    the categorical columns whose levels are not known; ``categorical``, the names of
    the categorical columns read."""
    distinct = []
    for k in unknown:
        raw, found = read.codes[:, k], read.found[k]
        present = np.bincount(raw[raw >= 0], minlength=len(found)) > 0
        distinct.append(np.asarray(found, dtype=object)[present])
    gaps = (read.codes < 0).any(axis=0)
    sums = counts = None
    if with_means:
        sums = np.array([np.nansum(read.numbers[:, j]) for j in range(read.numbers.shape[1])])
        counts = np.count_nonzero(~np.isnan(read.numbers), axis=0).astype(np.float64)
    return _Summary(read.numbers.shape[0], distinct, sums, counts,
                    dict(zip(categorical, gaps.tolist())), read.nbytes)


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


@dataclass(frozen=True)
class ReadPartition:
    """One partition of a table as first read, before its levels are known: its numeric
    columns (missing values NaN, no mean filled yet) and, for each categorical column,
    each row's code into the levels found in the partition.

    Attributes
    ----------
    numbers : ndarray of shape (rows, numeric columns)
    codes : ndarray of shape (rows, categorical columns), int32
        Positions in ``found``; -1 for a missing value.
    found : tuple
        For each categorical column, the levels its codes index: the dtype's categories
        (a ``category`` column) or the partition's distinct values, in order of
        appearance (any other column).
    """

    numbers: np.ndarray
    codes: np.ndarray
    found: tuple

    @property
    def nbytes(self):
        return self.numbers.nbytes + self.codes.nbytes


def read_partition(frame, numeric, categorical, dtype=np.float64):
    """``frame`` (a pandas DataFrame) as a :class:`ReadPartition`: its ``numeric``
    columns and the level codes of its ``categorical`` ones, in one read."""
    import pandas as pd

    frame = frame.set_axis([str(c) for c in frame.columns], axis=1)
    n = len(frame)
    numbers = np.empty((n, 0), dtype=dtype)
    if numeric:
        # nullable integer, float and boolean columns too: their missing values are NaN
        numbers = frame[list(numeric)].to_numpy(dtype=dtype, na_value=np.nan).reshape(n, -1)
    codes = np.empty((n, len(categorical)), dtype=np.int32)
    found = []
    for k, column in enumerate(categorical):
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            raw, levels = values.cat.codes.to_numpy(), values.cat.categories
        else:
            raw, levels = pd.factorize(values)
        codes[:, k] = raw
        found.append(levels)
    return ReadPartition(np.ascontiguousarray(numbers), codes, tuple(found))


def encode_frame(frame, encoding, dtype=np.float64, layout="csr"):
    """One partition (a pandas DataFrame) as the matrix of ``encoding``'s features:
    :func:`read_partition`, then :func:`encode_read`."""
    read = read_partition(frame, encoding.numeric, list(encoding.levels), dtype)
    return encode_read(read, encoding, dtype, layout)


def encode_read(read, encoding, dtype=np.float64, layout="csr"):
    """A :class:`ReadPartition` as the matrix of ``encoding``'s features.

    With ``layout="csr"``, a CSR matrix written in one compiled pass
    (:func:`~daskglm.compute.table_loops.table_csr`) from each row's entries: its numeric
    values other than zero, then one 1 per categorical column whose level has a column,
    so each row's column indices are sorted.  With ``layout="blocks"``, a categorical
    block (:class:`~daskglm.compute.categorical_matrix.CategoricalMatrix`): the numeric
    columns as a dense array (``read``'s own, unless means fill missing values) and
    each row's level columns, the same features.  A categorical column's levels are
    matched on the levels found in the partition, not row by row.

    Raises
    ------
    ValueError
        For a missing value in a categorical column, unless missing values are a level.
    """
    numbers = read.numbers.astype(dtype, copy=False)
    n = numbers.shape[0]
    if encoding.means:
        means = np.array([encoding.means[c] for c in encoding.numeric], dtype=dtype)
        numbers = np.where(np.isnan(numbers), means, numbers)
    width = numbers.shape[1]
    index = np.int32 if encoding.n_features < np.iinfo(np.int32).max else np.int64
    columns = np.empty((n, len(encoding.levels)), dtype=index)
    for k, (column, levels) in enumerate(encoding.levels.items()):
        codes = _level_codes(read.codes[:, k], read.found[k], levels,
                             encoding.missing_level, column)
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


def _level_codes(raw, found, levels, missing_level, column):
    """Each row's position in ``levels`` (-1 for a level not among them), from its code
    ``raw`` into ``found`` (-1: missing); a missing value is :data:`MISSING_LEVEL`'s
    position, or an error when it is not a level."""
    import pandas as pd

    missing = raw < 0
    positions = pd.Index(levels).get_indexer(found)
    codes = positions[np.maximum(raw, 0)] if len(positions) else np.full(len(raw), -1)
    codes = codes.astype(np.int64)
    if missing.any():
        if not missing_level:
            raise _missing_error(column)
        codes[missing] = pd.Index(levels).get_loc(MISSING_LEVEL)
    return codes


def _missing_error(column):
    return ValueError(f"Column {column!r} has missing values; fill them (or drop those "
                      "rows), or fit with missing='mean' (a level of their own).")


def is_table_with_categories(X):
    """Whether ``X`` is a pandas or Dask DataFrame with a categorical or string column."""
    return is_table(X) and bool(categorical_columns(X))


def is_table(X):
    """Whether ``X`` is a pandas or Dask DataFrame."""
    return hasattr(X, "dtypes") and hasattr(X, "columns")


def encoded_array(frame, encoding, dtype=np.float64, compute=None, lengths=None,
                  layout="csr", kept=None):
    """``frame`` encoded (:func:`encode_frame` in ``layout``): a matrix (pandas) or a Dask
    array of one chunk per partition (Dask; ``compute`` computes the partitions' lengths,
    a pass, unless ``lengths`` gives them).

    ``kept``, the partitions as :func:`read_table` kept them, are encoded
    (:func:`encode_read`) instead of reading ``frame`` again.

    A Dask array of categorical blocks (``layout="blocks"``) is for the engine's
    partitions: Dask joins and slices its chunks by rows, and no other numpy function
    takes them.
    """
    if not hasattr(frame, "__dask_graph__"):
        if kept is not None:
            return encode_read(kept[0], encoding, dtype, layout)
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
    if kept is None:
        encoded = [encode(part, encoding, dtype, layout) for part in parts]
    else:
        encoded = [_encode_kept(read, encoding, dtype, layout) for read in kept]
    blocks = [da.from_delayed(part, shape=(int(rows), encoding.n_features), dtype=dtype,
                              meta=meta)
              for part, rows in zip(encoded, lengths)]
    return da.concatenate(blocks, axis=0)


def _encode_kept(read, encoding, dtype, layout):
    """A delayed :func:`encode_read` of a kept read: a future (named by its key) or a
    :class:`ReadPartition` of this process (not hashed for a name)."""
    import dask

    pure = not isinstance(read, ReadPartition)
    return dask.delayed(encode_read, pure=pure)(read, encoding, dtype, layout)


def _empty_blocks(encoding, dtype):
    return CategoricalMatrix(np.empty((0, len(encoding.numeric)), dtype=dtype),
                             np.empty((0, len(encoding.levels)), dtype=np.int32),
                             encoding.n_features)
