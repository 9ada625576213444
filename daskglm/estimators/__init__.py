"""scikit-learn compatible estimators.

Each class maps scikit-learn's objective convention for the class of the same name onto
daskglm's ``mean weighted loss + penalty`` problem, so that the coefficients agree with
scikit-learn's.  ``__init__`` only stores parameters; everything is checked in ``fit``, so
``set_params``, ``clone``, ``Pipeline`` and ``GridSearchCV`` behave as usual.

Data may be numpy arrays, scipy CSR matrices, Dask arrays or Dask DataFrames.  With an
active ``distributed.Client`` the fit runs on its workers; otherwise in this process.

The modules, each importing only from those above it:

``validation``
    input checks of ``fit``, ``predict`` and ``score``.
``base``
    ``_GLMBase``, the shared fit template: solver choice, engine, warm start, progress,
    fitted attributes, the linear predictor; the shared docstring pieces.
``linear``
    the regressors ``GLM``, ``LinearRegression``, ``Ridge``, ``Lasso``, ``ElasticNet``,
    ``PoissonRegressor`` and their base with ``predict`` and ``score``.
``logistic``
    ``LogisticRegression``, ``PENALTY_FROM_L1_RATIO`` and the class-label helpers.
``multi_output``
    predictions of coefficient matrices and multi-output regression.
``sgd``, ``sgd_early_stopping``
    ``SGDRegressor`` and the SGD base with ``partial_fit``, ``coef_init`` and the losses;
    early stopping on held-out rows.
``sgd_classifier``, ``sgd_one_vs_rest``
    ``SGDClassifier``: binary, one-vs-rest, class weights, probabilities.
``tweedie``
    ``GammaRegressor`` and ``TweedieRegressor``.
``dask_ml_params``, ``poisson_regression``
    dask-ml's parameters translated at fit time; ``PoissonRegression``, dask-ml's class.
``inference`` (used by ``base``), ``offsets``
    ``inference=True``: standard errors, ``summary()``, deviances, AIC/BIC; the checks of
    offsets and exposures.
``hypothesis``, ``prediction`` (used by ``inference``)
    Wald, per-term Wald and likelihood-ratio tests, ``anova``; ``get_prediction``.
``table_columns``, ``partition_encoding``, ``categorical``, ``text``
    tables with categorical columns: which columns they are, one partition read and
    encoded, the encoding of a whole table; text columns hashed per partition
    (``HashingFeatures``).
``cv_folds``, ``ridge_cv``, ``path_cv``, ``cv``, ``glm_cv``, ``logistic_cv``
    which fold holds out each row; ``RidgeCV`` from Gram statistics; the paths fitted
    fold by fold (``PathCV``, folds as row weights) under ``LassoCV`` and
    ``ElasticNetCV``, ``GLMCV`` and ``LogisticRegressionCV``: penalties chosen by
    cross-validation.
"""

from .cv import ElasticNetCV, LassoCV
from .glm_cv import GLMCV
from .linear import GLM, ElasticNet, Lasso, LinearRegression, PoissonRegressor, Ridge
from .logistic import PENALTY_FROM_L1_RATIO as PENALTY_FROM_L1_RATIO
from .logistic import LogisticRegression
from .logistic_cv import LogisticRegressionCV
from .poisson_regression import PoissonRegression
from .ridge_cv import RidgeCV
from .sgd import SGDRegressor
from .sgd_classifier import SGDClassifier
from .text import HashingFeatures
from .tweedie import GammaRegressor, TweedieRegressor

__all__ = [
    "GLM", "LinearRegression", "Ridge", "Lasso", "ElasticNet", "LogisticRegression",
    "PoissonRegressor", "GammaRegressor", "TweedieRegressor", "SGDRegressor", "SGDClassifier",
    "RidgeCV", "LassoCV", "ElasticNetCV", "LogisticRegressionCV", "HashingFeatures",
    "GLMCV", "PoissonRegression",
]
