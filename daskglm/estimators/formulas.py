"""Formulas (``y ~ C(region) + age + np.log(density)``) on pandas and Dask DataFrames,
through formulaic, as glum and statsmodels take them.

The formula's right-hand side is evaluated per partition, where the partition lives,
into a CSR matrix, with one model spec for every partition: the levels of the categorical
variables (the variables inside ``C(...)`` and the columns of categories or strings) are
found first, from their dtype or one pass over them, and every partition's columns are
cast to categoricals of exactly those levels, so that each partition gets the same
columns.  The spec itself is learnt on the first partition; the state of its stateful
transforms is then learnt from every row, in one more pass, so that a Dask table's
features are those of the whole table: ``scale(...)`` and ``center(...)`` sum their
argument's moments over the partitions, and any other (splines, ``poly``) is given its
argument's values, gathered on the driver (8 bytes a row).  The left-hand side
is one column of the frame, the target as it is (numbers, or class labels).  An intercept
in the formula is the estimator's ``fit_intercept``, never a penalised column; levels are
treatment-coded with the first as reference for an unpenalised fit, and all kept with a
penalty.  Missing values are an error (formulaic's ``na_action="raise"``), unless the
estimator's ``missing`` is ``"mean"``: a numeric variable's missing values are then its
mean and a categorical variable's a level of their own, ``"(missing)"``, both found in the
pass that finds the levels and applied to every partition (at prediction too) before the
formula is evaluated, so ``np.log(density)`` is the log of the filled column.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .formula_names import (
    NAMESPACE,
    backtick_aliases,
    categorical_read,
    names_read,
    target_column,
    variables_read,
    with_backticks,
)
from .validation import frame_partitions, partition_rows, projected_partitions

__all__ = ["FormulaDesign", "design", "name_features"]

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
    means : dict
        ``{variable: mean}`` filling the missing values of numeric variables
        (``missing="mean"``; empty otherwise).
    variables : ndarray of str
        The columns the right-hand side reads, in the table's order: the estimator's
        ``feature_names_in_``.
    """

    def __init__(self, formula, target, levels, spec, means=None, columns=None,
                 variables=None):
        self.formula, self.target, self.levels, self.spec = formula, target, levels, spec
        self.means = dict(means or {})
        self.variables = np.asarray(list(variables or ()), dtype=object)
        columns = list(spec.column_names if columns is None else columns)
        self.columns = columns
        self.intercept = INTERCEPT in columns
        self._keep = [i for i, name in enumerate(columns) if name != INTERCEPT]
        self.names = np.asarray([columns[i] for i in self._keep], dtype=object)

    def to_saved(self):
        """The design as JSON-ready values (:mod:`daskglm.model_files`): the formula, its
        levels and means, and the right-hand side's spec as formulaic rebuilds it (its
        formula, full rank or not, the stateful transforms' state) with its columns."""
        return {"formula": self.formula, "target": self.target,
                "levels": {c: [_plain(v) for v in values] for c, values in self.levels.items()},
                "means": {c: float(v) for c, v in self.means.items()},
                "rhs": _rhs_text(self.spec.formula),
                "ensure_full_rank": bool(self.spec.ensure_full_rank),
                "transform_state": _tagged(self.spec.transform_state),
                "columns": list(self.columns),
                "variables": [str(v) for v in self.variables]}

    @classmethod
    def from_saved(cls, saved):
        """The design :meth:`to_saved` describes: its spec is formulaic's for the same
        right-hand side, full rank or not, with the same transforms' state, so that it
        makes the same features of the same table."""
        import formulaic

        spec = formulaic.ModelSpec(formula=saved["rhs"], output="sparse",
                                   ensure_full_rank=saved["ensure_full_rank"],
                                   transform_state=_untagged(saved["transform_state"]))
        return cls(saved["formula"], saved["target"], dict(saved["levels"]), spec,
                   saved["means"], saved["columns"], saved.get("variables"))

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
        frame = _with_levels(_filled(frame, self.means, self.levels), self.levels)
        matrix = self.spec.get_model_matrix(frame, output="sparse", na_action="raise")
        matrix = sp.csr_matrix(getattr(matrix, "__wrapped__", matrix), dtype=dtype)
        return matrix[:, self._keep] if len(self._keep) != matrix.shape[1] else matrix


def name_features(estimator, built):
    """Name ``estimator``'s features as the formula of ``built`` (a
    :class:`FormulaDesign`) does: ``feature_names_out_`` its model's columns,
    ``feature_names_in_`` (and ``n_features_in_``) the table's columns it reads, and
    ``param_names_``, when inference made them, ``"Intercept"`` then the columns, as
    statsmodels' ``model.exog_names``."""
    estimator.feature_names_out_ = built.names
    estimator.feature_names_in_ = built.variables
    estimator.n_features_in_ = len(built.variables)
    if hasattr(estimator, "param_names_"):
        estimator.param_names_ = [INTERCEPT] * bool(estimator.fit_intercept) \
            + [str(name) for name in built.names]


def design(formula, data, *, full_rank, compute=None, missing="error"):
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
    missing : {"error", "mean"}
        Missing values are an error; or, with ``"mean"``, a numeric variable's are its
        mean and a categorical variable's are a level of their own
        (:data:`~daskglm.estimators.categorical.MISSING_LEVEL`), found in the pass that
        finds the levels, before the formula is evaluated.

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
    target = target_column(parsed, formula)
    columns = set(data.columns)
    aliases = backtick_aliases(parsed.rhs, columns)
    variables = variables_read(parsed.rhs)
    absent = sorted(({target} | variables) - columns - NAMESPACE)
    if absent:
        raise ValueError(f"The formula names {absent}, which are not columns of the data "
                         f"(columns: {list(data.columns)}).")
    wrapped = categorical_read(parsed.rhs)
    categorical = sorted(name for name in variables
                         if name in columns and (name in wrapped or not
                                                 pd.api.types.is_numeric_dtype(
                                                     data[name].dtype)))
    means = {}
    if missing == "mean":
        numeric = sorted(name for name in variables
                         if name in data.columns and name not in categorical)
        levels, means = _levels_and_means(data, categorical, numeric, compute)
    else:
        levels = _levels(data, categorical, compute)
    first = data.get_partition(0).compute() if hasattr(data, "__dask_graph__") else data
    matrix = formulaic.model_matrix(parsed.rhs, _with_levels(_filled(first, means, levels),
                                                             levels),
                                    output="sparse", ensure_full_rank=full_rank,
                                    na_action="raise")
    spec = matrix.model_spec
    if hasattr(data, "__dask_graph__") and data.npartitions > 1:
        spec = _with_whole_table_state(spec, data, levels, means, compute, aliases)
    read = [c for c in data.columns if c in variables]
    return FormulaDesign(formula, target, levels, spec, means, variables=read)


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


def _levels_and_means(data, categorical, numeric, compute):
    """The levels of the ``categorical`` variables, with :data:`MISSING_LEVEL` last for
    those with missing values, and the means of the ``numeric`` ones, in one pass
    (:func:`~daskglm.estimators.categorical.table_encoding`; a numeric column inside
    ``C(...)`` is read as its values)."""
    import pandas as pd

    from .categorical import table_encoding

    view = data[categorical + numeric]
    as_values = {c: view[c].astype(object) for c in categorical
                 if pd.api.types.is_numeric_dtype(view[c].dtype)}
    if as_values:
        view = view.assign(**as_values)
    encoding = table_encoding(view, drop_first=False, compute=compute, missing="mean")
    levels = {c: encoding.levels[c].tolist() for c in categorical}
    return levels, {c: encoding.means[c] for c in numeric}


def _filled(frame, means, levels):
    """``frame`` with each missing value of a variable in ``means`` its mean, and of a
    categorical variable whose ``levels`` hold :data:`MISSING_LEVEL`, that level."""
    from .categorical import MISSING_LEVEL

    fills = {c: frame[c].astype(np.float64).fillna(mean) for c, mean in means.items()}
    fills.update({c: frame[c].astype(object).where(frame[c].notna(), MISSING_LEVEL)
                  for c, values in levels.items() if MISSING_LEVEL in values})
    return frame.assign(**fills) if fills else frame


#: The stateful transforms whose state is summed over the partitions: formulaic's
#: ``scale`` and ``center`` (a mean and a root mean square).
_MOMENT_TRANSFORMS = ("scale", "center")

#: The name the values of a stateful transform's argument take when its state is learnt
#: on them.
_VALUES = "daskglm_values"


def _with_whole_table_state(spec, data, levels, means, compute, aliases=None):
    """``spec`` with the state of each stateful transform learnt from every row of
    ``data``, in one pass, not from the first partition alone: the moments of the
    argument of ``scale(...)`` and ``center(...)``, summed over the partitions; the values
    of the argument of any other (splines, ``poly``: knots, bounds, coefficients),
    gathered on the driver (8 bytes a row) and given to the transform itself."""
    import ast

    import dask

    summed, gathered = {}, {}
    for term in spec.transform_state:
        call = ast.parse(term, mode="eval").body
        name = getattr(getattr(call, "func", None), "id", None)
        if name == "Q":  # a column by its name: nothing to learn
            continue
        if not (isinstance(call, ast.Call) and call.args):
            raise ValueError(f"The stateful transform {term!r} takes no argument to learn "
                             "its state from.")
        argument = with_backticks(ast.unparse(call.args[0]), aliases)
        if name in _MOMENT_TRANSFORMS:
            summed[term] = argument
        else:
            call.args[0] = ast.Name(_VALUES)
            gathered[term] = (argument, ast.unparse(call))
    expressions = list(summed.values()) + [argument for argument, _ in gathered.values()]
    if not expressions:
        return spec
    # the pass reads only the columns the arguments name (a parquet source no other)
    columns = sorted(set().union(*map(names_read, expressions)) & set(data.columns))
    levels = {c: values for c, values in levels.items() if c in columns}
    means = {c: mean for c, mean in means.items() if c in columns}
    read = dask.delayed(_arguments, pure=True)
    found = (compute or _compute)(*[read(part, expressions, len(summed), levels, means)
                                    for part in projected_partitions(data, columns)])
    state = dict(spec.transform_state)
    for k, term in enumerate(summed):
        state[term] = _summed_state(term, state[term], [f[k] for f in found])
    for k, (term, (_, rewritten)) in enumerate(gathered.items(), start=len(summed)):
        state[term] = _learnt_state(rewritten, np.concatenate([f[k] for f in found]))
    return spec.update(transform_state=state)


def _summed_state(term, state, moments):
    """The state of ``scale`` or ``center`` ``term`` from each partition's ``(rows, mean,
    sum of squares about the mean)`` of its argument, as formulaic learns it on every
    row: the mean as the center, unless given; the root mean square about the center
    (``ddof`` as learnt) as the scale, unless given or not asked for."""
    rows = np.array([m[0] for m in moments], dtype=np.float64)
    part_means = np.array([m[1] for m in moments], dtype=np.float64)
    squares = np.array([m[2] for m in moments], dtype=np.float64)
    total = rows.sum()
    learnt = dict(state)
    center = learnt.get("center")
    if center is not None and _learnt_from_data(term, "center"):
        center = np.float64(np.sum(rows * part_means) / total)
        learnt["center"] = center
    if learnt.get("scale") is not None and _learnt_from_data(term, "scale"):
        origin = 0.0 if center is None else float(center)
        spread = np.sum(squares + rows * (part_means - origin) ** 2)
        learnt["scale"] = np.float64(np.sqrt(spread / (total - learnt.get("ddof", 1))))
    return learnt


def _learnt_from_data(term, argument):
    """Whether the ``argument`` (``center`` or ``scale``) of the transform ``term`` is
    learnt from the data: not given as a value (``scale(x, center=2.0)``)."""
    import ast

    for keyword in ast.parse(term, mode="eval").body.keywords:
        if keyword.arg == argument:
            return isinstance(keyword.value, ast.Constant) and keyword.value.value is True
    return True


def _learnt_state(rewritten, values):
    """The state the transform ``rewritten`` (its argument named :data:`_VALUES`) learns
    on ``values``: formulaic's own, on every row."""
    import formulaic
    import pandas as pd

    matrix = formulaic.model_matrix(f"0 + {rewritten}", pd.DataFrame({_VALUES: values}),
                                    na_action="raise")
    return matrix.model_spec.transform_state[rewritten]


def _arguments(part, expressions, summed, levels, means):
    """``expressions`` evaluated on ``part`` (filled and cast as the features are): for
    the first ``summed``, their rows, mean and sum of squares about that mean; for the
    others, their values."""
    import formulaic

    frame = _with_levels(_filled(part, means, levels), levels)
    found = []
    for k, expression in enumerate(expressions):
        values = np.asarray(formulaic.model_matrix(f"0 + I({expression})", frame,
                                                   na_action="raise"),
                            dtype=np.float64).ravel()
        if k < summed:
            mean = float(values.mean()) if len(values) else 0.0
            found.append((len(values), mean, float(np.sum((values - mean) ** 2))))
        else:
            found.append(values)
    return found


def _rhs_text(rhs):
    """A right-hand side as formulaic parses it again to the same terms: columns whose
    names are not Python names in backticks (formulaic's text leaves them bare), and
    ``0 +`` when it has no intercept (formulaic's text then leaves the intercept out,
    which it reads as one)."""
    terms = [":".join(f"`{factor.expr}`" if factor.eval_method.name == "LOOKUP"
                      and not factor.expr.isidentifier() else factor.expr
                      for factor in term.factors) for term in rhs]
    return " + ".join(terms if "1" in terms else ["0", *terms])


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _tagged(value):
    """A stateful transform's state as JSON: dictionaries as pairs (their keys may be
    numbers), arrays with their dtype, numpy scalars as numbers."""
    if isinstance(value, dict):
        return {"pairs": [[_tagged(k), _tagged(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, (list, tuple)):
        return {"list": [_tagged(v) for v in value]}
    value = _plain(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"A formula's transform state holds {type(value).__name__}, which "
                     "a model file cannot hold.")


def _untagged(value):
    """The state :func:`_tagged` wrote."""
    if isinstance(value, dict) and "pairs" in value:
        return {_untagged(k): _untagged(v) for k, v in value["pairs"]}
    if isinstance(value, dict) and "array" in value:
        return np.asarray(value["array"], dtype=value["dtype"])
    if isinstance(value, dict) and "list" in value:
        return [_untagged(v) for v in value["list"]]
    return value


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
