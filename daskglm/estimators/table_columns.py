"""What a table is and which of its columns hold categories: :func:`is_table`,
:func:`categorical_columns`, and a categorical column's levels, as its dtype knows them
(:func:`known_levels`) or as its values show them (:func:`distinct_values`), and the
level of its missing values (:data:`MISSING_LEVEL`).

A table is a pandas or Dask DataFrame; a column holding a ``category`` dtype, strings or
other objects is categorical (booleans are numbers, 0 and 1, as in scikit-learn).
:mod:`.categorical` encodes such tables, :mod:`.validation` checks ``score``'s input
without encoding them.
"""

from __future__ import annotations

__all__ = ["categorical_columns", "known_levels", "distinct_values", "is_table",
           "is_table_with_categories", "MISSING_LEVEL", "missing_values_error"]

#: The level of a categorical column's missing values with ``missing="mean"``.
MISSING_LEVEL = "(missing)"


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


def distinct_values(column):
    """The distinct non-missing values of a pandas or Dask Series: for Dask, each
    partition's, collected (no shuffle), to be made unique on the driver."""
    if hasattr(column, "__dask_graph__"):
        return column.map_partitions(_partition_distinct, meta=column._meta)
    return column.dropna().unique()


def _partition_distinct(part):
    return part.dropna().drop_duplicates()


def missing_values_error(column):
    """The ValueError of a categorical ``column`` with missing values when they are not a
    level of their own (``missing="error"``)."""
    return ValueError(f"Column {column!r} has missing values; fill them (or drop those "
                      "rows), or fit with missing='mean' (a level of their own).")


def is_table_with_categories(X):
    """Whether ``X`` is a pandas or Dask DataFrame with a categorical or string column."""
    return is_table(X) and bool(categorical_columns(X))


def is_table(X):
    """Whether ``X`` is a pandas or Dask DataFrame."""
    return hasattr(X, "dtypes") and hasattr(X, "columns")
