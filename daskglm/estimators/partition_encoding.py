"""One partition of a table, read and encoded: :func:`read_partition` reads it once
(a :class:`ReadPartition`: its numbers and each row's level codes, before the table's
levels are known), :func:`encode_read` turns a read into the matrix of a
:class:`~.categorical.TableEncoding`'s features (a CSR matrix, or a categorical block),
:func:`encode_frame` does both, and :func:`encoded_array` makes a Dask array of a Dask
table's partitions so encoded, each where it lives (or of the reads
:func:`~.categorical.read_table` kept).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..compute.categorical_matrix import CategoricalMatrix
from .table_columns import MISSING_LEVEL, missing_values_error
from .validation import frame_partitions, partition_rows, projected_partitions

__all__ = ["ReadPartition", "read_partition", "encode_frame", "encode_read", "encoded_array"]


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
            raise missing_values_error(column)
        codes[missing] = pd.Index(levels).get_loc(MISSING_LEVEL)
    return codes


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
