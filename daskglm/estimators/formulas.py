"""Formulas (``y ~ C(region) + age + np.log(density)``) on pandas and Dask DataFrames,
through formulaic, as glum and statsmodels take them.

The formula's right-hand side is evaluated per partition, where the partition lives,
into a CSR matrix, with one model spec for every partition: the levels of the categorical
variables (the variables inside ``C(...)`` and the columns of categories or strings) are
found first, from their dtype or one pass over them, and every partition's columns are
cast to categoricals of exactly those levels, so that each partition gets the same
columns.  The spec itself is learnt on the first partition: a stateful transform
(``center``, ``scale``, splines) takes its state from that partition.  The left-hand side
is one column of the frame, the target as it is (numbers, or class labels).  An intercept
in the formula is the estimator's ``fit_intercept``, never a penalised column; levels are
treatment-coded with the first as reference for an unpenalised fit, and all kept with a
penalty.  Missing values are an error (formulaic's ``na_action="raise"``).
"""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from .validation import frame_partitions, partition_rows, projected_partitions

__all__ = ["FormulaDesign", "design"]

#: formulaic's name of the intercept column.
INTERCEPT = "Intercept"


class FormulaDesign:
    """A formula's model spec with the levels of its categorical variables: what turns a
    table into the model's features, at fit and at prediction.

    Attributes
    ----------
    formula : str
    target : str
        The left-hand side's column.
    levels : dict
        ``{variable: levels}`` of the categorical variables.
    spec : formulaic.ModelSpec
        The right-hand side's spec (its intercept column included when it has one).
    names : ndarray of str
        The model's features (the spec's columns but the intercept).
    intercept : bool
        Whether the formula has an intercept.
    """

    def __init__(self, formula, target, levels, spec):
        self.formula, self.target, self.levels, self.spec = formula, target, levels, spec
        columns = list(spec.column_names)
        self.intercept = INTERCEPT in columns
        self._keep = [i for i, name in enumerate(columns) if name != INTERCEPT]
        self.names = np.asarray([columns[i] for i in self._keep], dtype=object)

    def features(self, frame, dtype=np.float64, compute=None):
        """The features of ``frame``: a CSR matrix (pandas) or a Dask array of CSR chunks
        (Dask; ``compute`` computes the partitions' lengths, one pass)."""
        if not hasattr(frame, "__dask_graph__"):
            return self._partition_features(frame, dtype)
        import dask
        import dask.array as da

        parts = frame_partitions(frame)
        lengths = partition_rows(projected_partitions(frame, []), compute)
        build = dask.delayed(self._partition_features, pure=True)
        meta = sp.csr_matrix((0, len(self.names)), dtype=dtype)
        blocks = [da.from_delayed(build(part, dtype), shape=(int(rows), len(self.names)),
                                  dtype=dtype, meta=meta)
                  for part, rows in zip(parts, lengths)]
        return da.concatenate(blocks, axis=0)

    def _partition_features(self, frame, dtype=np.float64):
        matrix = self.spec.get_model_matrix(_with_levels(frame, self.levels), output="sparse",
                                            na_action="raise")
        matrix = sp.csr_matrix(getattr(matrix, "__wrapped__", matrix), dtype=dtype)
        return matrix[:, self._keep] if len(self._keep) != matrix.shape[1] else matrix


def design(formula, data, *, full_rank, compute=None):
    """The :class:`FormulaDesign` of ``formula`` on ``data`` (pandas or Dask DataFrame).

    Parameters
    ----------
    formula : str
        ``"target ~ terms"``.
    data : pandas.DataFrame or dask.dataframe.DataFrame
    full_rank : bool
        Drop each categorical variable's first level (treatment coding), for an
        unpenalised fit.
    compute : callable, optional
        Computes Dask collections: the estimator's, so that the passes are in its ledger.

    Raises
    ------
    ImportError
        Without formulaic (``pip install daskglm[formula]``).
    ValueError
        For a formula without one column on its left-hand side, or naming a column the
        data do not have.
    """
    try:
        import formulaic
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Formulas need formulaic: pip install 'daskglm[formula]'.") from exc
    import pandas as pd

    parsed = formulaic.Formula(formula)
    if not hasattr(parsed, "lhs") or len(parsed.lhs.required_variables) != 1:
        raise ValueError(f"The formula needs one column on its left-hand side; got {formula!r}.")
    target = next(iter(parsed.lhs.required_variables))
    missing = sorted((parsed.required_variables - set(data.columns)) - _NAMESPACE)
    if missing:
        raise ValueError(f"The formula names {missing}, which are not columns of the data "
                         f"(columns: {list(data.columns)}).")
    wrapped = set(re.findall(r"C\(\s*([A-Za-z_][A-Za-z_0-9]*)", formula))
    categorical = sorted(name for name in parsed.rhs.required_variables
                         if name in data.columns and (name in wrapped or not
                                                      pd.api.types.is_numeric_dtype(
                                                          data[name].dtype)))
    levels = _levels(data, categorical, compute)
    first = data.get_partition(0).compute() if hasattr(data, "__dask_graph__") else data
    matrix = formulaic.model_matrix(parsed.rhs, _with_levels(first, levels),
                                    output="sparse", ensure_full_rank=full_rank,
                                    na_action="raise")
    return FormulaDesign(formula, target, levels, matrix.model_spec)


#: Names a formula may use that are not columns (the namespace formulaic evaluates in).
_NAMESPACE = {"np", "numpy"}


def _levels(data, columns, compute):
    import pandas as pd

    from .categorical import distinct_values, known_levels

    levels, unknown = {}, []
    for column in columns:
        known = known_levels(data[column])
        if known is not None:
            levels[column] = known
        else:
            unknown.append(column)
    if unknown:
        distinct = [distinct_values(data[c]) for c in unknown]
        if hasattr(distinct[0], "__dask_graph__"):
            distinct = (compute or _compute)(*distinct)
        for column, values in zip(unknown, distinct):
            levels[column] = sorted(pd.unique(np.asarray(values)).tolist(),
                                    key=lambda v: (type(v).__name__, v))
    return levels


def _compute(*collections):
    import dask

    return dask.compute(*collections)


def _with_levels(frame, levels):
    """``frame`` with each categorical variable a pandas Categorical of exactly ``levels``
    (a value outside them becomes missing, an error in the model matrix)."""
    import pandas as pd

    if not levels:
        return frame
    return frame.assign(**{column: pd.Categorical.from_codes(
        pd.Index(values).get_indexer(frame[column].to_numpy()), categories=values)
        for column, values in levels.items()})
