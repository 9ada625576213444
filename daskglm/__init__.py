"""daskglm: generalised linear models on Dask, with every round of communication accounted for."""

from .comm import CommLedger
from .estimators import (
    GLM,
    ElasticNet,
    Lasso,
    LinearRegression,
    LogisticRegression,
    PoissonRegressor,
    Ridge,
)
from .families import Binomial, Family, Gaussian, Poisson
from .penalties import L1, L2, NoPenalty, Penalty

__version__ = "0.1.0"

__all__ = [
    "GLM",
    "LinearRegression",
    "Ridge",
    "Lasso",
    "ElasticNet",
    "LogisticRegression",
    "PoissonRegressor",
    "Family",
    "Gaussian",
    "Binomial",
    "Poisson",
    "Penalty",
    "NoPenalty",
    "L2",
    "L1",
    "CommLedger",
]
