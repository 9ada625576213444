"""daskglm: generalised linear models on Dask, with every round of communication accounted for."""

from .comm import CommLedger, CommReport
from .compare import Comparison, compare
from .estimators import (
    GLM,
    ElasticNet,
    Lasso,
    LinearRegression,
    LogisticRegression,
    PoissonRegressor,
    Ridge,
    SGDClassifier,
    SGDRegressor,
)
from .families import (
    Binomial,
    CLogLog,
    Distribution,
    Family,
    Gaussian,
    Identity,
    Inverse,
    Link,
    Log,
    Logit,
    Poisson,
    Power,
    Probit,
)
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
    "SGDRegressor",
    "SGDClassifier",
    "Family",
    "Gaussian",
    "Binomial",
    "Poisson",
    "Distribution",
    "Link",
    "Identity",
    "Logit",
    "Log",
    "Inverse",
    "Probit",
    "CLogLog",
    "Power",
    "Penalty",
    "NoPenalty",
    "L2",
    "L1",
    "CommReport",
    "CommLedger",
    "compare",
    "Comparison",
]
