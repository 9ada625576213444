"""Tables with categorical columns: levels found once, each partition encoded where it
lives (a categorical block, or a CSR matrix), coefficients named ``column[level]``.

A pandas or Dask DataFrame whose columns are numbers, ``category``, strings or booleans
is fitted as is.  At fit, :func:`read_table` finds each categorical column's levels: the
dtype's own categories when it knows them, otherwise the column's distinct values.
Each partition is then encoded (:func:`~.partition_encoding.encode_frame`): the numeric
columns as they are, followed by one column per level of each categorical column (never
a dense dummy matrix), as a categorical block
(:class:`~daskglm.compute.categorical_matrix.CategoricalMatrix`: the numeric columns and
each row's level codes) for the fits whose solver reads them (:data:`BLOCK_SOLVERS`), as
a CSR matrix for the others and for prediction.  As glum and H2O do, an unpenalised fit
drops each column's first level (its reference: the intercept carries it, and the
dummies are not collinear with it); a penalised fit keeps every level, so no level is
singled out by the penalty.

Missing values are chosen by the estimator's ``missing``: ``"error"`` (the default) refuses
them, naming the column; ``"mean"`` fills a numeric column's with its mean at fit (kept for
prediction) and gives a categorical column's their own level,
:data:`~.table_columns.MISSING_LEVEL`, as H2O does.  A level not seen at fit, met at
prediction, gets no column: its rows contribute nothing from that column, as the
reference level's rows do when it was dropped.

A fit on a Dask DataFrame reads it once (:func:`read_table`): each partition is read
(:func:`~.partition_encoding.read_partition`) and kept where it was read, and the levels
not known, the means, which categorical columns have gaps and each partition's rows
(the encoded array's chunk sizes) come from those reads; the partitions the fit
validates are encoded from the kept reads (:func:`~.partition_encoding.encode_read`).  A
table too large to keep is read by a pass over the columns it needs
(:func:`table_encoding`; a parquet source reads no other column), then read again by the
fit.  Each read is a ``driver_pass`` of the fit's ledger.

Here: the encoding (:class:`TableEncoding`) and the reads that find it.  One partition's
read and encoding are :mod:`.partition_encoding`; what a table is and which of its
columns are categorical, :mod:`.table_columns`.  Their names are importable from here.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..engine.cache import CACHE_SAFETY, free_memory
from ..engine.driver_passes import compute_pass, keep_pass
from .partition_encoding import (
    ReadPartition,
    encode_frame,
    encode_read,
    encoded_array,
    read_partition,
)
from .table_columns import (
    MISSING_LEVEL,
    categorical_columns,
    distinct_values,
    is_table,
    is_table_with_categories,
    known_levels,
    missing_values_error,
)
from .validation import frame_partitions, projected_partitions

__all__ = ["TableEncoding", "table_encoding", "read_table", "ReadPartition",
           "read_partition", "encode_frame", "encode_read", "categorical_columns",
           "is_table_with_categories", "is_table", "encoded_array", "MISSING_LEVEL",
           "BLOCK_SOLVERS", "check_missing", "known_levels", "distinct_values"]

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
                    raise missing_values_error(column)
        for column in self.categorical:
            if drop_first and len(levels[column]) < 2:
                raise ValueError(f"Column {column!r} has one level "
                                 f"({levels[column].tolist()}); its dummy would be the "
                                 "intercept. Drop the column.")
        return TableEncoding(self.columns, {c: levels[c] for c in self.categorical},
                             bool(drop_first), means, self.with_means)


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


def _order(value):
    return (type(value).__name__, value)

