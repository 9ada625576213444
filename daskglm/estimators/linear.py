"""The regressors: :class:`GLM`, :class:`LinearRegression`, :class:`Ridge`,
:class:`Lasso`, :class:`ElasticNet` and :class:`PoissonRegressor`.

Each maps scikit-learn's objective for the class of the same name onto ``mean weighted
loss + penalty``.  Their base :class:`~.regressor_base._RegressorGLM` (also that of
:class:`~daskglm.estimators.sgd.SGDRegressor`) holds ``predict`` and ``score``.
"""

from __future__ import annotations

from ..model.families import Gaussian, Poisson, get_family
from ..model.penalties import NoPenalty, make_penalty
from .dask_ml_params import DASK_ML_DOC, summed_loss_penalty
from .docstrings import COMMON_DOC, FITTED_DOC, POSITIVE_DOC
from .grouped_binomial import GroupedBinomialMixin
from .inference import INFERENCE_DOC, INFERENCE_FITTED_DOC
from .lasso_conventions import SKLEARN_ONLY_DOC, CheckInputMixin, DualGapMixin, check_selection
from .multi_output import MultiOutputRegressionMixin
from .regressor_base import _RegressorGLM
from .sklearn_solvers import RIDGE_SOLVERS

__all__ = ["GLM", "LinearRegression", "Ridge", "PoissonRegressor", "Lasso", "ElasticNet",
           "_RegressorGLM"]


class GLM(GroupedBinomialMixin, _RegressorGLM):
    __doc__ = (
        """Generalised linear model with any link and an elastic-net penalty.

    Minimises ``mean_weighted_loss + alpha * (l1_ratio * ||coef||_1 + (1 - l1_ratio) / 2 *
    ||coef||_2^2)`` (glmnet's convention); the intercept is never penalised.  The loss is
    the family's negative log-likelihood with the chosen link (the canonical link by
    default).  With a non-canonical link ``solver="newton"`` uses the expected (Fisher)
    information, i.e. it is Fisher scoring, except for the log link of the Gamma,
    negative binomial and Tweedie (power in [1, 2]), where the loss is convex in the
    predictor and Newton takes its exact curvature; the normal equations need the
    Gaussian family with the identity link.  With a non-canonical link the fit starts
    from the intercept ``link(0.5)`` (binomial) or ``link(1)`` (Gaussian, Poisson) where
    that is finite, so that a Poisson with the identity link, say, starts at a valid mean.

    Parameters
    ----------
    family : {"gaussian", "binomial", "poisson", "gamma", "inverse_gaussian", \
"negative_binomial"} or Family, default="gaussian"
        The distribution; ``Tweedie(power)`` and ``NegativeBinomial(alpha)`` (from
        :mod:`daskglm.model.families`) for those with a parameter (``"negative_binomial"``
        is ``alpha=1``, statsmodels' default).
    link : {"identity", "logit", "log", "inverse", "probit", "cloglog", "inverse_squared", \
"sqrt"} or Link, optional
        The link function, e.g. ``"probit"`` with ``family="binomial"`` or
        ``daskglm.Power(0.5)``.  ``None`` (default) is the family's default link, that of
        statsmodels' family of the same name (identity, logit, log, inverse for the
        Gamma, ``inverse_squared`` for the inverse Gaussian, log for the negative binomial
        and the Tweedie), or the link of a ``Family`` instance.
    penalty : {"l2", "l1", "elasticnet", "none"} or None, default="l2"
    alpha : float, default=0.0
        Penalty strength on the mean-loss scale.
    l1_ratio : float, default=0.5
        Elastic-net mixing, used with ``penalty="elasticnet"``.
"""
        + INFERENCE_DOC
        + COMMON_DOC
        + POSITIVE_DOC
        + FITTED_DOC
        + INFERENCE_FITTED_DOC
    )

    def __init__(self, family="gaussian", penalty="l2", alpha=0.0, l1_ratio=0.5, *, solver="auto",
                 fit_intercept=True, tol=1e-4, max_iter=100, solver_options=None, cache="auto",
                 verbose=0, warm_start=False, link=None, inference=False, cov_type="nonrobust",
                 cov_kwds=None, positive=False,
                 missing="error"):
        self.inference, self.cov_type, self.cov_kwds = inference, cov_type, cov_kwds
        self.family = family
        self.link = link
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.positive = positive
        self.missing = missing

    def _family(self):
        return get_family(self.family, self.link)

    def _check_params(self):
        super()._check_params()
        self._family()  # an unknown family or link: a ValueError before any work

    def _penalty(self, total_weight):
        return make_penalty(self.penalty, self.alpha, self.l1_ratio)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = not self._family().distribution.allows_negative_targets
        return tags


class LinearRegression(MultiOutputRegressionMixin, _RegressorGLM):
    __doc__ = (
        """Ordinary least squares, as :class:`sklearn.linear_model.LinearRegression`.

    Also takes dask-ml's parameters: with ``penalty`` or ``C`` given, minimises dask-ml's
    ``||y - X coef - intercept||^2_W + lamduh * regularizer(coef)``, ``lamduh = 1 / C``
    (:mod:`~daskglm.estimators.dask_ml_params`), the intercept unpenalised.

    Parameters
    ----------
    penalty : {"l2", "l1", "elastic_net"} or None, default=None
        dask-ml's regularizer (``"l2"`` when only ``C`` is given); None with ``C`` None:
        ordinary least squares.
    C : float, optional
        dask-ml's inverse regularisation strength (1.0 when only ``penalty`` is given).
    class_weight : None
        dask-ml's parameter; only None (row weights are ``sample_weight``).
    copy_X : bool, default=True
        Accepted for scikit-learn's signature; daskglm never modifies ``X``.
"""
        + INFERENCE_DOC
        + COMMON_DOC
        + POSITIVE_DOC
        + DASK_ML_DOC
        + FITTED_DOC
        + INFERENCE_FITTED_DOC
    )

    _ravel_one_target = False

    def __init__(self, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=100,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False, inference=False, cov_type="nonrobust",
                 cov_kwds=None, positive=False, missing="error",
                 penalty=None, C=None, dual=False, intercept_scaling=1.0, class_weight=None,
                 random_state=None, multi_class="auto", n_jobs=None, solver_kwargs=None,
                 copy_X=True):
        self.copy_X = copy_X
        self.penalty = penalty
        self.C = C
        self.dual = dual
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.multi_class = multi_class
        self.n_jobs = n_jobs
        self.solver_kwargs = solver_kwargs
        self.inference, self.cov_type, self.cov_kwds = inference, cov_type, cov_kwds
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.positive = positive
        self.missing = missing

    def _family(self):
        return Gaussian()

    #: dask-ml's ``C`` weighs the summed loss.
    _penalty_scales_with_weight = True

    def _penalty(self, total_weight):
        if self.penalty is None and self.C is None:
            return NoPenalty()
        return summed_loss_penalty("l2" if self.penalty is None else self.penalty,
                                   1.0 if self.C is None else self.C, total_weight, 0.5)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class Ridge(MultiOutputRegressionMixin, _RegressorGLM):
    __doc__ = (
        """Least squares with an L2 penalty, as :class:`sklearn.linear_model.Ridge`.

    Minimises ``||y - X coef - intercept||^2_W + alpha * ||coef||^2`` (sums over rows,
    weighted by ``sample_weight``).

    Parameters
    ----------
    alpha : float, default=1.0
        L2 strength, >= 0.
    copy_X, random_state : optional
        Accepted for scikit-learn's signature; daskglm never modifies ``X`` and draws no
        random numbers.

    ``solver`` also takes scikit-learn's names (:mod:`~.sklearn_solvers`): ``"svd"``,
    ``"cholesky"``, ``"lsqr"``, ``"sparse_cg"``, ``"sag"`` and ``"saga"`` solve the normal
    equations, and with ``positive=True`` raise a ValueError, as scikit-learn's.
"""
        + COMMON_DOC
        + POSITIVE_DOC
        + FITTED_DOC
    )

    _sklearn_solvers = RIDGE_SOLVERS

    def __init__(self, alpha=1.0, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=100,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False, positive=False, missing="error", copy_X=True,
                 random_state=None):
        self.copy_X = copy_X
        self.random_state = random_state
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.positive = positive
        self.missing = missing

    def _family(self):
        return Gaussian()

    #: ``alpha`` weighs ``|coef|^2`` against the summed loss, as scikit-learn's Ridge.
    _penalty_scales_with_weight = True

    def _penalty(self, total_weight):
        return make_penalty("l2", self.alpha / total_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class PoissonRegressor(_RegressorGLM):
    __doc__ = (
        """Poisson regression with a log link, as :class:`sklearn.linear_model.PoissonRegressor`.

    Minimises ``mean half Poisson deviance + alpha / 2 * ||coef||^2``.

    Parameters
    ----------
    alpha : float, default=1.0
        L2 strength on the mean-loss scale, >= 0.
"""
        + INFERENCE_DOC
        + COMMON_DOC
        + FITTED_DOC
        + INFERENCE_FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=100,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False, inference=False, cov_type="nonrobust",
                 cov_kwds=None, missing="error"):
        self.inference, self.cov_type, self.cov_kwds = inference, cov_type, cov_kwds
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.missing = missing

    def _family(self):
        return Poisson()

    def _penalty(self, total_weight):
        return make_penalty("l2", self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = True
        return tags


_LONG_COMMON_DOC = COMMON_DOC.replace("max_iter : int, default=100", "max_iter : int, default=1000")


class Lasso(DualGapMixin, CheckInputMixin, MultiOutputRegressionMixin, _RegressorGLM):
    __doc__ = (
        """Least squares with an L1 penalty, as :class:`sklearn.linear_model.Lasso`.

    Minimises ``1 / 2 * mean_W (y - X coef - intercept)^2 + alpha * ||coef||_1``, the mean
    weighted by ``sample_weight`` (scikit-learn rescales the weights to sum to
    ``n_samples``, which is the same).  ``solver="auto"`` uses proximal gradient.

    Parameters
    ----------
    alpha : float, default=1.0
        L1 strength, >= 0; ``alpha=0`` fits ordinary least squares.
"""
        + _LONG_COMMON_DOC
        + POSITIVE_DOC
        + SKLEARN_ONLY_DOC
        + FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, solver="auto", fit_intercept=True, tol=1e-4, max_iter=1000,
                 solver_options=None, cache="auto", verbose=0,
                 warm_start=False, positive=False, missing="error", precompute=False,
                 copy_X=True, random_state=None, selection="cyclic"):
        self.precompute, self.copy_X = precompute, copy_X
        self.random_state, self.selection = random_state, selection
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.positive = positive
        self.missing = missing

    def _family(self):
        return Gaussian()

    def _check_params(self):
        super()._check_params()
        check_selection(self)

    def _penalty(self, total_weight):
        return make_penalty("l1", self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class ElasticNet(DualGapMixin, CheckInputMixin, MultiOutputRegressionMixin, _RegressorGLM):
    __doc__ = (
        """Least squares with an elastic-net penalty, as :class:`sklearn.linear_model.ElasticNet`.

    Minimises ``1 / 2 * mean_W (y - X coef - intercept)^2 + alpha * l1_ratio * ||coef||_1
    + alpha * (1 - l1_ratio) / 2 * ||coef||^2``, the mean weighted by ``sample_weight``.
    ``solver="auto"`` uses proximal gradient (the normal equations when ``l1_ratio=0``).

    Parameters
    ----------
    alpha : float, default=1.0
        Penalty strength, >= 0.
    l1_ratio : float, default=0.5
        Mixing in [0, 1]: 1 is the lasso, 0 ridge.
"""
        + _LONG_COMMON_DOC
        + POSITIVE_DOC
        + SKLEARN_ONLY_DOC
        + FITTED_DOC
    )

    def __init__(self, alpha=1.0, *, l1_ratio=0.5, solver="auto", fit_intercept=True, tol=1e-4,
                 max_iter=1000, solver_options=None, cache="auto", verbose=0,
                 warm_start=False, positive=False, missing="error", precompute=False,
                 copy_X=True, random_state=None, selection="cyclic"):
        self.precompute, self.copy_X = precompute, copy_X
        self.random_state, self.selection = random_state, selection
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.positive = positive
        self.missing = missing

    def _family(self):
        return Gaussian()

    def _check_params(self):
        super()._check_params()
        check_selection(self)

    def _penalty(self, total_weight):
        return make_penalty("elasticnet", self.alpha, self.l1_ratio)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
