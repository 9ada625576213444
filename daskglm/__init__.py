"""daskglm: generalised linear models on Dask, with every round of communication accounted for.

The public names are imported on first use: a worker that unpickles one kernel imports
that kernel's module, not the estimators and scikit-learn (a cold worker would otherwise
spend seconds importing them before its first task).
"""

import importlib

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "GLM": "estimators",
    "LinearRegression": "estimators",
    "Ridge": "estimators",
    "Lasso": "estimators",
    "ElasticNet": "estimators",
    "LogisticRegression": "estimators",
    "PoissonRegressor": "estimators",
    "GammaRegressor": "estimators",
    "TweedieRegressor": "estimators",
    "SGDRegressor": "estimators",
    "SGDClassifier": "estimators",
    "Family": "model.families",
    "Gaussian": "model.families",
    "Binomial": "model.families",
    "Poisson": "model.families",
    "Gamma": "model.families",
    "InverseGaussian": "model.families",
    "Tweedie": "model.families",
    "NegativeBinomial": "model.families",
    "Distribution": "model.distributions",
    "Link": "model.links",
    "Identity": "model.links",
    "Logit": "model.links",
    "Log": "model.links",
    "Inverse": "model.links",
    "Probit": "model.links",
    "CLogLog": "model.links",
    "Power": "model.links",
    "Penalty": "model.penalties",
    "NoPenalty": "model.penalties",
    "L2": "model.penalties",
    "L1": "model.penalties",
    "CommReport": "accounting.ledger",
    "compare": "accounting.comparison",
    "Comparison": "accounting.comparison",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    try:  # submodules, e.g. daskglm.estimators before anything imported it
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
