"""The compiled loop that makes a table partition's CSR matrix (numba).

:func:`daskglm.estimators.categorical.encode_frame` turns a partition of a table into the
CSR matrix of its features: each row's numeric values other than zero, then a 1 in the
column of each categorical value's level.  Written in numpy, that stacks every row's
candidate entries into ``n x (p + k)`` arrays of values, columns and a mask, then selects
them: several passes over arrays wider than the result.  :func:`table_csr` writes the
matrix's three arrays directly, in two passes over the rows: one to count each row's
entries, one to write them.  The entries are those, and in the order, of the numpy
construction it replaces.

Imported on a table's first encoded partition; ``cache=True`` lets every worker process
load the compiled code from numba's on-disk cache.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["table_csr"]


@numba.njit(cache=True, nogil=True)
def _count_entries(numbers, columns, counts):
    n, p = numbers.shape
    for i in range(n):
        count = 0
        for j in range(p):
            if numbers[i, j] != 0:  # NaN is an entry too: the validation round finds it
                count += 1
        for c in range(columns.shape[1]):
            if columns[i, c] >= 0:
                count += 1
        counts[i] = count


@numba.njit(cache=True, nogil=True)
def _write_entries(numbers, columns, indptr, indices, data):
    n, p = numbers.shape
    for i in range(n):
        at = indptr[i]
        for j in range(p):
            value = numbers[i, j]
            if value != 0:
                indices[at] = j
                data[at] = value
                at += 1
        for c in range(columns.shape[1]):
            column = columns[i, c]
            if column >= 0:
                indices[at] = column
                data[at] = 1.0
                at += 1


def table_csr(numbers, columns, width, dtype):
    """The CSR arrays of a table partition's features.

    Parameters
    ----------
    numbers : ndarray of shape (n, p)
        The numeric columns' values: the first ``p`` features.  Read in its own layout
        (a pandas frame's columns are a Fortran-ordered block).
    columns : ndarray of shape (n, k), int32 or int64
        For each categorical column, the feature of each row's level (``>= p``, increasing
        from one categorical column to the next), or -1 when the level has none.
    width : int
        The number of features.
    dtype : numpy dtype
        The matrix's values' type.

    Returns
    -------
    data, indices, indptr : ndarray
        A CSR matrix of shape ``(n, width)`` with each row's column indices sorted; the
        indices are int32 unless the width or the number of entries needs int64.
    """
    n = numbers.shape[0]
    numbers = np.asarray(numbers, dtype=dtype)  # any layout: a frame's columns are read in place
    columns = np.ascontiguousarray(columns)
    counts = np.empty(n, dtype=np.int64)
    _count_entries(numbers, columns, counts)
    entries = int(counts.sum())
    index = np.int32 if max(width, entries) < np.iinfo(np.int32).max else np.int64
    indptr = np.zeros(n + 1, dtype=index)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(entries, dtype=index)
    data = np.empty(entries, dtype=dtype)
    _write_entries(numbers, columns, indptr, indices, data)
    return data, indices, indptr
