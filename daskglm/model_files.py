"""Model files: a fitted estimator saved as arrays and JSON, loaded without a cluster.

``daskglm.save(model, path)`` writes one ``.npz`` file (numpy's zip of arrays, read with
``allow_pickle=False``: loading runs no code from the file) holding:

* ``__meta__``: a JSON document: the format's name and version, daskglm's version, the
  estimator's class and parameters (``get_params``), the fitted attributes that are not
  arrays (names, counts, flags, the solver chosen, the history, the table encoding of
  categorical columns, a formula's design: its formula, levels, means and transforms'
  state, from which formulaic rebuilds its spec), and the ledger's totals (``comm_summary_`` once loaded: the ledger
  itself, with its per-round records, stays with the fit);
* one entry per fitted array attribute (``coef_``, ``intercept_``, ``classes_``,
  ``bse_``, ...), under its own name, and one per kind of covariance of inference
  (``_covariances.HC0``, ...), for ``cov_params``, ``coef_table_`` and ``summary()``.

``daskglm.load(path)`` makes the estimator again from its class and parameters and sets
the attributes; its predictions are those of the saved model, bit for bit.  Only the
classes daskglm exports are made, and only parameters that JSON can hold are saved (a
parameter holding another object, a splitter for one, is refused with its name).
"""

from __future__ import annotations

import json
import os

import numpy as np

__all__ = ["save", "load", "FORMAT", "FORMAT_VERSION"]

#: The name and version written in every file, checked by :func:`load`.  Version 2 holds
#: a formula's design (``formula_design_``); a file without one is written as version 1.
FORMAT = "daskglm-model"
FORMAT_VERSION = 2

#: Fitted attributes not saved: the ledger (saved as its totals) and what only the fit
#: itself uses.
_NOT_SAVED = {"comm_"}

#: Private fitted state that is saved: inference's covariance matrices and standard errors
#: of each kind (``cov_params(kind)``, ``coef_table_``, ``summary()``), one array per kind,
#: named ``"<attribute>.<kind>"``.
_SAVED_BY_KIND = ("_covariances", "_standard_errors", "_inference_dfs")


def save(model, path):
    """Write fitted ``model`` to ``path`` (an ``.npz`` file; the suffix is added when
    missing, as numpy does).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        For an estimator that was not fitted.
    ValueError
        For a parameter or fitted attribute that neither JSON nor a numeric or string array
        can hold.
    """
    from sklearn.utils.validation import check_is_fitted

    import daskglm

    check_is_fitted(model)
    name = type(model).__name__
    if getattr(daskglm, name, None) is not type(model):
        raise ValueError(f"Only daskglm's own estimators are saved; got {name}.")
    params = {key: _typed_options_to_json(value)
              for key, value in model.get_params(deep=False).items()}
    for key, value in params.items():
        if not _is_json(value):
            raise ValueError(f"Parameter {key}={value!r} of {name} cannot be saved: only "
                             "numbers, strings, None, lists and dicts of them can.")
    arrays, attributes = {}, {}
    for key, value in vars(model).items():
        if not key.endswith("_") or key.startswith("_") or key in _NOT_SAVED:
            continue
        if key == "table_encoding_":
            attributes[key] = _encoding_to_json(value)
        elif key == "formula_design_":
            attributes[key] = value.to_saved()
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biufU":
            arrays[key] = value
        elif isinstance(value, np.ndarray) and value.dtype.kind == "O" and _is_json(
                value.tolist()):
            attributes[key] = {"object_array": value.tolist()}
        elif _is_json(_plain(value)):
            attributes[key] = _plain(value)
        else:
            raise ValueError(f"Fitted attribute {key} of {name} ({type(value).__name__}) "
                             "cannot be saved.")
    for key in _SAVED_BY_KIND:
        for kind, value in getattr(model, key, {}).items():
            arrays[f"{key}.{kind}"] = np.asarray(value)
    version = FORMAT_VERSION if "formula_design_" in attributes else 1
    meta = {"format": FORMAT, "format_version": version,
            "daskglm_version": daskglm.__version__, "class": name, "params": params,
            "attributes": attributes,
            "fit_dtype": str(getattr(model, "_fit_dtype", np.dtype(np.float64))),
            "comm_summary": _ledger_summary(getattr(model, "comm_", None))}
    payload = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    np.savez(path, __meta__=payload, **arrays)


def load(path):
    """The estimator saved at ``path`` by :func:`save`, fitted, ready to predict.

    ``path`` is the path given to :func:`save`: its ``.npz`` suffix may be left out, as
    :func:`save` adds it.

    Raises
    ------
    ValueError
        For a file that is not a daskglm model file, or of a newer format version.
    """
    import daskglm
    from daskglm.estimators.categorical import TableEncoding
    from daskglm.estimators.robust import covariance_kind

    if not os.path.exists(path) and os.path.exists(f"{os.fspath(path)}.npz"):
        path = f"{os.fspath(path)}.npz"
    with np.load(path, allow_pickle=False) as archive:
        if "__meta__" not in archive.files:
            raise ValueError(f"{path} is not a daskglm model file (no __meta__ entry).")
        meta = json.loads(bytes(archive["__meta__"]).decode("utf-8"))
        arrays = {key: archive[key] for key in archive.files if key != "__meta__"}
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not a daskglm model file (format {meta.get('format')!r}).")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"{path} has format version {meta['format_version']}; this daskglm "
                         f"reads up to {FORMAT_VERSION}: upgrade daskglm.")
    cls = getattr(daskglm, meta["class"], None)
    if not isinstance(cls, type):
        raise ValueError(f"{path} holds an unknown estimator class {meta['class']!r}.")
    model = cls(**{key: _typed_options_from_json(value)
                   for key, value in meta["params"].items()})
    for key, value in meta["attributes"].items():
        if key == "table_encoding_":
            value = TableEncoding(tuple(value["columns"]),
                                  {c: np.asarray(levels) for c, levels in value["levels"].items()},
                                  bool(value["drop_first"]), dict(value.get("means") or {}),
                                  bool(value.get("missing_level", False)))
        elif key == "formula_design_":
            from daskglm.estimators.formulas import FormulaDesign

            value = FormulaDesign.from_saved(value)
        elif isinstance(value, dict) and set(value) == {"object_array"}:
            value = np.asarray(value["object_array"], dtype=object)
        setattr(model, key, value)
    for key, value in arrays.items():
        attribute, _, kind = key.partition(".")
        if attribute in _SAVED_BY_KIND:
            model.__dict__.setdefault(attribute, {})[kind] = value
        else:
            setattr(model, key, value)
    if "_covariances" in vars(model):
        model._inference_dfs = {kind: float(value) for kind, value in
                                vars(model).get("_inference_dfs", {}).items()}
        model._cov_kind = covariance_kind(getattr(model, "cov_type", "nonrobust"))
    model._fit_dtype = np.dtype(meta["fit_dtype"])
    model.comm_summary_ = meta["comm_summary"]
    return model


def _typed_options_to_json(value):
    from .solvers.options import SolverOptions

    if isinstance(value, SolverOptions):
        return {"solver_options_of": value.solver, "values": value.as_dict()}
    return value


def _typed_options_from_json(value):
    if isinstance(value, dict) and set(value) == {"solver_options_of", "values"}:
        from .solvers.options import options_type

        return options_type(value["solver_options_of"])(**value["values"])
    return value


def _is_json(value):
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _plain(value):
    """numpy scalars as Python numbers; other values as they are."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def _encoding_to_json(encoding):
    return {"columns": list(encoding.columns), "drop_first": encoding.drop_first,
            "levels": {c: _plain_list(levels) for c, levels in encoding.levels.items()},
            "means": {c: float(v) for c, v in (encoding.means or {}).items()},
            "missing_level": encoding.missing_level}


def _plain_list(values):
    return [_plain(v) for v in np.asarray(values).tolist()]


def _ledger_summary(ledger):
    if ledger is None:
        return None
    summary = {key: value for key, value in ledger.to_dict().items() if key != "records"}
    return summary if _is_json(summary) else {"rounds": ledger.rounds}
