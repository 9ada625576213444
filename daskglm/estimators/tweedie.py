"""Regressors for positive and compound targets: :class:`GammaRegressor` and
:class:`TweedieRegressor`, as scikit-learn's classes of the same names.

Both minimise scikit-learn's objective, ``mean half deviance + alpha / 2 * ||coef||^2``
(the mean weighted by ``sample_weight``); the family's unit loss differs from the half
deviance by terms free of the coefficients only, so the coefficients are scikit-learn's.
"""

from __future__ import annotations

from numbers import Real

from ..model.families import Gamma, Tweedie
from ..model.penalties import make_penalty
from .docstrings import COMMON_DOC, FITTED_DOC
from .inference import INFERENCE_DOC, INFERENCE_FITTED_DOC
from .linear import _RegressorGLM


class GammaRegressor(_RegressorGLM):
    __doc__ = (
        """Gamma regression with a log link, as :class:`sklearn.linear_model.GammaRegressor`.

    Minimises ``mean half Gamma deviance + alpha / 2 * ||coef||^2``; targets must be > 0.

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
                 solver_options=None, cache="auto", verbose=0, warm_start=False,
                 inference=False, cov_type="nonrobust",
                 cov_kwds=None, missing="error"):
        self.alpha = alpha
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.inference, self.cov_type, self.cov_kwds = inference, cov_type, cov_kwds
        self.missing = missing

    def _family(self):
        return Gamma("log")

    def _penalty(self, total_weight):
        return make_penalty("l2", self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = True
        return tags


class TweedieRegressor(_RegressorGLM):
    __doc__ = (
        """Tweedie regression, as :class:`sklearn.linear_model.TweedieRegressor`.

    Minimises ``mean half Tweedie deviance + alpha / 2 * ||coef||^2`` for the variance
    function ``mu**power``.

    Parameters
    ----------
    power : float, default=0.0
        0: normal; 1: Poisson; in (1, 2): compound Poisson-Gamma; 2: Gamma; 3: inverse
        Gaussian; other values >= 1 or <= 0 are Tweedie distributions too (targets >= 0
        for ``1 <= power < 2``, > 0 for ``power >= 2``); (0, 1) is refused.
    alpha : float, default=1.0
        L2 strength on the mean-loss scale, >= 0.
    link : {"auto", "identity", "log"}, default="auto"
        ``"auto"``: identity for ``power <= 0``, log otherwise (scikit-learn's choice).
"""
        + INFERENCE_DOC
        + COMMON_DOC
        + FITTED_DOC
        + INFERENCE_FITTED_DOC
    )

    def __init__(self, *, power=0.0, alpha=1.0, link="auto", solver="auto", fit_intercept=True,
                 tol=1e-4, max_iter=100, solver_options=None, cache="auto", verbose=0,
                 warm_start=False, inference=False, cov_type="nonrobust",
                 cov_kwds=None, missing="error"):
        self.power = power
        self.alpha = alpha
        self.link = link
        self.solver = solver
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.inference, self.cov_type, self.cov_kwds = inference, cov_type, cov_kwds
        self.missing = missing

    def _family(self):
        if self.link not in ("auto", "identity", "log"):
            raise ValueError(f"link must be 'auto', 'identity' or 'log'; got {self.link!r}.")
        if isinstance(self.power, bool) or not isinstance(self.power, Real):
            raise ValueError(f"power must be a real number; got {self.power!r}.")
        link = self.link
        if link == "auto":
            link = "identity" if self.power <= 0 else "log"
        return Tweedie(self.power, link)

    def _check_params(self):
        super()._check_params()
        self._family()  # a bad power or link: a ValueError before any work

    def _penalty(self, total_weight):
        return make_penalty("l2", self.alpha)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.positive_only = self.power > 0
        return tags
