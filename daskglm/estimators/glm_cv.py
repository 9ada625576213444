"""A GLM of any family and link with its elastic-net penalty chosen by cross-validation
along a regularisation path: :class:`GLMCV`, on the paths of :mod:`.path_cv` and the
grids and Gram paths of :mod:`.cv`."""

from __future__ import annotations

import numpy as np

from ..engine.driver_passes import records_driver_passes
from ..fitting.paths import null_model_gradient
from .cv import NO_GRID_FOR_L1_RATIO_0, PATH_DOC, RegressionPathCV, alpha_values
from .linear import GLM

__all__ = ["GLMCV"]


def _glm_alpha_grid(engine, family, n_alphas, eps, l1_ratio, fit_intercept, positive=False,
                    has_offset=False):
    """The grid of a GLM path: ``n_alphas`` values from ``alpha_max`` down to ``eps
    alpha_max``, ``alpha_max`` the largest gradient entry of the mean loss at the model with
    no coefficients (the intercept at ``g(weighted mean of y)``, the intercept-only
    optimum of every family and link; with an offset, that optimum found by Newton steps
    on the intercept, one round each; zero without an intercept), over ``l1_ratio``: the
    smallest alpha at which every coefficient is zero
    (:func:`~daskglm.fitting.paths.null_model_gradient`: one gradient round, and one for
    the mean target when the validation round's is gone)."""
    if l1_ratio == 0:
        raise ValueError(NO_GRID_FOR_L1_RATIO_0)
    grad = null_model_gradient(engine, family, fit_intercept, has_offset)
    largest = max(0.0, np.max(-grad)) if positive else np.max(np.abs(grad))
    alpha_max = largest / l1_ratio
    if not alpha_max > np.finfo(float).resolution:
        return np.full(n_alphas, np.finfo(float).resolution)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


class GLMCV(RegressionPathCV, GLM):
    __doc__ = (
        """A GLM of any family and link with an elastic-net penalty chosen by
    cross-validation along a regularisation path, as glum's ``GeneralizedLinearRegressorCV``
    and H2O's ``lambda_search``.

    Each fold's path is fitted from the largest ``alpha`` (all coefficients zero) down,
    every fit started from the previous one, on the fold's training rows of one engine (the
    folds are row weights, never copies); each model is scored by its mean unit loss (half
    the deviance, up to terms free of the model) on the held-out rows, in one round per
    fold and ``l1_ratio``; the ``alpha`` (and ``l1_ratio``) of the lowest mean held-out
    deviance is refitted on all rows.  The Gaussian family with the identity link solves
    its paths from the folds' Gram statistics, as :class:`LassoCV`.

    Parameters
    ----------
    family : str or Family, default="gaussian"
        As :class:`GLM`'s.
    link : str, Link or None, default=None
        As :class:`GLM`'s (None: the family's canonical link).
    l1_ratio : float or array-like of float, default=1.0
        Mixings in [0, 1] to try (0, a ridge path, only with an explicit ``alphas``
        grid); ``l1_ratio_`` is the chosen one."""
        + PATH_DOC.replace(
            "The alpha of the smallest mean held-out squared error (weighted by\n"
            "        ``sample_weight``, as scikit-learn).",
            "The alpha of the smallest mean held-out deviance (weighted by\n"
            "        ``sample_weight``).").replace(
            "mse_path_ : ndarray of shape (n_alphas, n_folds) or (n_l1_ratio, n_alphas, "
            "n_folds)\n        Held-out mean squared error of every alpha on every fold.",
            "deviance_path_ : ndarray of shape (n_alphas, n_folds) or (n_l1_ratio, n_alphas, "
            "n_folds)\n        Held-out mean unit loss (half the deviance, up to terms free "
            "of the\n        model) of every alpha on every fold.")
    )

    def __init__(self, family="gaussian", link=None, *, l1_ratio=1.0, eps=1e-3, alphas=100,
                 fit_intercept=True, cv=None, solver="auto", tol=1e-4, max_iter=1000,
                 solver_options=None, cache="auto", verbose=0, positive=False,
                 missing="error"):
        self.family = family
        self.link = link
        self.l1_ratio = l1_ratio
        self.eps = eps
        self.alphas = alphas
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.positive = positive
        self.missing = missing

    def _task_of(self):
        family = self._family()
        return "regression" if _is_least_squares(family) else family

    def _fold_grams(self, engine, folds, splits, n_features):
        if not _is_least_squares(self._family()):
            return None
        return super()._fold_grams(engine, folds, splits, n_features)

    def _grid(self, engine):
        if _is_least_squares(self._family()):
            return super()._grid(engine)
        grid = []
        for l1_ratio in self._l1_ratios():
            if isinstance(self.alphas, (int, np.integer)):
                values = _glm_alpha_grid(engine, self._family(), int(self.alphas), self.eps,
                                         l1_ratio, self.fit_intercept, self.positive,
                                         self.__dict__.get("_path_offset", False))
            else:
                values = alpha_values(self.alphas)
            grid.append((float(l1_ratio), values))
        return grid

    def _scores(self, held):
        if _is_least_squares(self._family()):
            return super()._scores(held)
        return -held.loss / held.weight

    @records_driver_passes
    def fit(self, X, y, sample_weight=None, offset=None, exposure=None, **params):
        """Fit every fold's path, choose the penalty, refit on all rows.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
        offset : array-like or Dask array of shape (n_samples,), optional
            A known term of each row's linear predictor, as :meth:`GLM.fit`'s: it travels
            with the rows into every fold's fit and into the held-out deviances.
        exposure : array-like or Dask array of shape (n_samples,), optional
            Positive exposures for a log link: ``offset = log(exposure)``.
        **params : dict
            Metadata for the splitter (``groups``), routed as scikit-learn routes them;
            only with ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self
        """
        return self._routed_fit(X, y, sample_weight, params, offset=offset, exposure=exposure)

    def _fit(self, X, y, sample_weight, offset=None, exposure=None):
        super()._fit(X, y, sample_weight, offset, exposure)
        path = self.__dict__.pop("mse_path_")
        # the Gaussian's unit loss is half the squared error
        self.deviance_path_ = path / 2 if _is_least_squares(self._family()) else path
        return self


def _is_least_squares(family):
    """Whether ``family``'s loss is squared error (the Gaussian with the identity link):
    its paths are solved from Gram statistics and scored by squared error."""
    return family.quadratic
