"""daskglm: generalised linear models on Dask, with every round of communication accounted for.

The public names are imported on first use: a worker that unpickles one kernel imports
that kernel's module, not the estimators and scikit-learn (a cold worker would otherwise
spend seconds importing them before its first task).
"""

from .lazy_names import lazy_names

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "save": "model_files",
    "load": "model_files",
    "GLM": "estimators",
    "GLMCV": "estimators",
    "HashingFeatures": "estimators",
    "LinearRegression": "estimators",
    "Ridge": "estimators",
    "Lasso": "estimators",
    "ElasticNet": "estimators",
    "LogisticRegression": "estimators",
    "PoissonRegressor": "estimators",
    "PoissonRegression": "estimators",
    "GammaRegressor": "estimators",
    "TweedieRegressor": "estimators",
    "SGDRegressor": "estimators",
    "SGDClassifier": "estimators",
    "RidgeCV": "estimators",
    "LassoCV": "estimators",
    "ElasticNetCV": "estimators",
    "LogisticRegressionCV": "estimators",
    "lr_test": "estimators.hypothesis",
    "anova": "estimators.hypothesis",
    "WaldTestResult": "estimators.hypothesis",
    "LRTestResult": "estimators.hypothesis",
    "PredictionResults": "estimators.prediction",
    "fit_grid": "estimators.grid",
    "GridFit": "estimators.grid",
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
    "compare": "comparison",
    "Comparison": "comparison",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, submodules=True)
