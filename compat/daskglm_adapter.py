"""Pytest plugin: run scikit-learn's linear-model tests against daskglm's estimators.

Loaded with ``-p daskglm_adapter`` (see README.md). At import it replaces the estimator names
in ``sklearn.linear_model``'s namespace by thin subclasses of daskglm's estimators, so a test
module's ``from sklearn.linear_model import Ridge`` (or ``linear_model.Ridge``) gets daskglm's.
scikit-learn's own modules are imported first, so scikit-learn internals keep their own classes.

The subclasses only translate what scikit-learn spells differently:

* their constructor accepts scikit-learn's parameter names as well as daskglm's (defaults:
  daskglm's for shared names, scikit-learn's for the others);
* solver names daskglm does not have map, at fit time, to the daskglm solver of the same
  objective (``"newton-cholesky"`` -> ``"newton"``, ``"saga"`` -> ``"auto"``, ...);
* parameters that only steer how scikit-learn computes (``copy_X``, ``n_jobs``,
  ``precompute``, ``selection``, ``shuffle``, ...) are accepted and ignored;
* parameters that would change the result and daskglm does not have (``dual=True``,
  ``early_stopping=True``, ...) raise ``NotImplementedError`` when set away from
  scikit-learn's default, so the test fails visibly instead of testing something else.
"""

from __future__ import annotations

import functools
import importlib
import inspect

import numpy as np

# scikit-learn modules that import linear-model classes for their own use: imported before the
# namespace is patched so they keep scikit-learn's classes.
for _name in ("sklearn.utils.estimator_checks", "sklearn.ensemble", "sklearn.model_selection",
              "sklearn.pipeline", "sklearn.multiclass", "sklearn.calibration",
              "sklearn.feature_selection", "sklearn.svm", "sklearn.datasets",
              "sklearn.preprocessing", "sklearn.metrics", "sklearn.compose",
              "sklearn.kernel_approximation", "sklearn.utils._testing", "sklearn.inspection",
              "sklearn.multioutput", "sklearn.neighbors", "sklearn.cross_decomposition"):
    importlib.import_module(_name)

import sklearn.linear_model as sk_lm  # noqa: E402

import daskglm  # noqa: E402

_LOGISTIC_SOLVERS = {"newton-cg": "newton", "newton-cholesky": "newton", "liblinear": "auto",
                     "sag": "auto", "saga": "auto"}
_RIDGE_SOLVERS = {name: "auto" for name in
                  ("svd", "cholesky", "lsqr", "sparse_cg", "sag", "saga", "sparse_cg")}
_GLM_SOLVERS = {"newton-cholesky": "newton"}

# parameters that only change how scikit-learn computes, never what
_IGNORED = {"copy_X", "n_jobs", "precompute", "selection", "shuffle", "gcv_mode",
            "use_legacy_attributes",  # the layout of LogisticRegressionCV's CV results only
            "random_state", "verbose"}

# per estimator: {parameter: {scikit-learn value: daskglm value}}
_VALUE_MAPS = {
    "LogisticRegression": {"solver": _LOGISTIC_SOLVERS},
    "LogisticRegressionCV": {"solver": _LOGISTIC_SOLVERS, "l1_ratios": {"warn": None},
                             "scoring": {"warn": None}},
    "Ridge": {"solver": _RIDGE_SOLVERS},
    "PoissonRegressor": {"solver": _GLM_SOLVERS},
    "GammaRegressor": {"solver": _GLM_SOLVERS},
    "TweedieRegressor": {"solver": _GLM_SOLVERS},
    "SGDClassifier": {"solver": {}},
    "SGDRegressor": {"solver": {}},
}

_ADAPTED = ["LinearRegression", "Ridge", "RidgeCV", "Lasso", "LassoCV", "ElasticNet",
            "ElasticNetCV", "LogisticRegression", "LogisticRegressionCV", "SGDClassifier",
            "SGDRegressor", "PoissonRegressor", "GammaRegressor", "TweedieRegressor"]


def _same(a, b):
    try:
        return bool(np.all(a == b)) if not isinstance(a, str) or isinstance(b, str) else False
    except Exception:
        return a is b


def _adapt(name):
    dg_cls = getattr(daskglm, name)
    sk_cls = getattr(sk_lm, name)
    dg_sig = inspect.signature(dg_cls.__init__).parameters
    sk_sig = inspect.signature(sk_cls.__init__).parameters
    positional = [p for p in sk_sig if p != "self"
                  and sk_sig[p].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
    defaults, extra = {}, {}
    for p, par in dg_sig.items():
        if p != "self":
            defaults[p] = par.default
    for p, par in sk_sig.items():
        if p != "self" and p not in dg_sig:
            defaults[p] = par.default
            extra[p] = par.default
    keyword = [p for p in defaults if p not in positional]
    args = ", ".join(f"{p}=_d[{p!r}]" for p in positional)
    kwargs = ", ".join(f"{p}=_d[{p!r}]" for p in keyword)
    sep = ", " if args else ""
    body = "\n".join(f"    self.{p} = {p}" for p in positional + keyword)
    src = f"def __init__(self{sep}{args}, *, {kwargs}):\n{body}\n"
    namespace = {"_d": defaults}
    exec(src, namespace)  # a real signature, as BaseEstimator.get_params needs
    value_maps = _VALUE_MAPS.get(name, {})

    def _translate(self):
        for p, default in extra.items():
            value = getattr(self, p)
            if p not in _IGNORED and p not in value_maps and not _same(value, default):
                raise NotImplementedError(f"daskglm.{name} has no parameter {p}={value!r}")
        saved = {}
        for p, mapping in value_maps.items():
            value = getattr(self, p, None)
            if isinstance(value, str) and value in mapping:
                saved[p] = value
                setattr(self, p, mapping[value])
        return saved

    def _wrap(method_name):
        method = getattr(dg_cls, method_name, None)
        if method is None:
            return None

        @functools.wraps(method)
        def wrapper(self, *a, **kw):
            saved = _translate(self)
            try:
                return method(self, *a, **kw)
            finally:
                for p, value in saved.items():
                    setattr(self, p, value)
        return wrapper

    attrs = {"__init__": namespace["__init__"], "__module__": __name__,
             "__doc__": dg_cls.__doc__, "__qualname__": name}
    for m in ("fit", "partial_fit"):
        w = _wrap(m)
        if w is not None:
            attrs[m] = w
    return type(name, (dg_cls,), attrs)


ADAPTERS = {name: _adapt(name) for name in _ADAPTED if hasattr(daskglm, name)}
for _name, _cls in ADAPTERS.items():
    setattr(sk_lm, _name, _cls)
    globals()[_name] = _cls  # so that pickle finds the adapter class by name


def pytest_report_header(config):
    return f"daskglm adapter: {daskglm.__file__}; replaced {sorted(ADAPTERS)}"
