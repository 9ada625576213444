"""The lasso and the elastic net with their penalty chosen by cross-validation:
:class:`LassoCV` and :class:`ElasticNetCV`, and the alpha grids and Gram-statistics paths
that :class:`~daskglm.estimators.glm_cv.GLMCV` shares.

Each fold's path is fitted on its training rows (:class:`~.path_cv.PathCV`: folds as row
weights, one engine).  With squared loss, ``solver="auto"`` and at most
:data:`GRAM_PATH_MAX_FEATURES` columns, every fold's Gram statistics come from one round
instead, as for :class:`~daskglm.estimators.ridge_cv.RidgeCV`, and every path is solved and
scored on the driver ("compute once, solve many").  :class:`RidgeCV` is in
:mod:`.ridge_cv`, :class:`LogisticRegressionCV` in :mod:`.logistic_cv`.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.model_selection import check_cv
from sklearn.utils import check_scalar
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _raise_for_params,
    _routing_enabled,
    process_routing,
)

from ..engine.driver_passes import records_driver_passes
from ..fitting.cross_validation import gram_statistics_by_fold_ids
from ..fitting.paths import squared_loss_gradient_at_zero
from ..model.families import Gaussian
from ..model.penalties import NonNegative, make_penalty
from ..solvers import Problem
from ..solvers.proximal import solve_composite_quadratic
from .docstrings import COMMON_DOC
from .linear import ElasticNet, Lasso
from .path_cv import PathCV

__all__ = ["LassoCV", "ElasticNetCV", "GRAM_PATH_MAX_FEATURES"]


NO_GRID_FOR_L1_RATIO_0 = (
    "Automatic alpha grid generation is not supported for l1_ratio=0. Please supply a grid "
    "by providing your estimator with the appropriate `alphas=` argument.")


#: Most columns for which LassoCV / ElasticNetCV solve the folds' paths from Gram
#: statistics on the driver (``n_folds`` d x d matrices there).
GRAM_PATH_MAX_FEATURES = 1000


def _sum_stats(stats):
    total = stats[0]
    for more in stats[1:]:
        total = total + more
    return total


def _alpha_grid(engine, n_alphas, eps, l1_ratio, fit_intercept, positive=False):
    """scikit-learn's grid: ``n_alphas`` values from ``alpha_max`` down to ``eps alpha_max``,
    ``alpha_max = max |X_c^T W y_c| / (sum(w) l1_ratio)`` (``max(0, max X_c^T W y_c)`` when
    ``positive``); one gradient round at zero."""
    if l1_ratio == 0:
        raise ValueError(NO_GRID_FOR_L1_RATIO_0)
    d = engine.n_features
    grad = squared_loss_gradient_at_zero(engine)
    xty = -grad[:d]  # X^T W y
    if fit_intercept:
        mean_y = -grad[-1] / engine.sum_weight
        xty = xty - mean_y * engine.column_moments.sums
    largest = max(0.0, np.max(xty)) if positive else np.max(np.abs(xty))
    alpha_max = largest / (engine.sum_weight * l1_ratio)
    if alpha_max <= np.finfo(float).resolution:
        return np.full(n_alphas, np.finfo(float).resolution)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


def alpha_values(alphas):
    """An explicit ``alphas`` grid checked as scikit-learn checks it (each a real >= 0),
    from the largest down."""
    for index, alpha in enumerate(alphas):
        check_scalar(alpha, f"alphas[{index}]", target_type=numbers.Real, min_val=0.0,
                     include_boundaries="left")
    return np.sort(np.asarray(alphas, dtype=np.float64))[::-1]


class RegressionPathCV(PathCV):
    _task = "regression"

    def _fold_grams(self, engine, folds, splits, n_features):
        """Squared loss: every split's training and test Gram statistics, from one
        ``fold_gram`` round for k folds (a training set is the sum of the other folds)
        or two per split otherwise; the paths are then solved on the driver, no round per
        iteration.  Only with ``solver="auto"`` and at most :data:`GRAM_PATH_MAX_FEATURES`
        columns (``n_folds`` Gram matrices on the driver)."""
        if self.solver != "auto" or n_features > GRAM_PATH_MAX_FEATURES:
            return None
        if folds.is_partition:
            grams = gram_statistics_by_fold_ids(engine, splits[0][0], folds.n_folds)
            return [(_sum_stats([g for other, g in enumerate(grams) if other != fold]),
                     grams[fold]) for fold in range(folds.n_folds)]
        pairs = []
        for train_codes, _, test_codes, _ in splits:
            # codes: training rows 0 (the others 1); test rows 1 (the others 0)
            training = gram_statistics_by_fold_ids(engine, train_codes, 1)[0]
            test = gram_statistics_by_fold_ids(engine, test_codes, 2)[1]
            pairs.append((training, test))
        return pairs

    def _fit_path_on_gram(self, stats, values, l1_ratio, n_features):
        """The path on one training set's Gram statistics, on the driver: the same
        objective, penalty and optimality rule (``tol``) as the fits through the engine,
        each fit started from the previous one."""
        weight = stats.weight
        if not weight > 0:
            raise ValueError("A training set of cv has no weight.")
        if self.fit_intercept:
            hess, xty = stats.sxx / weight, stats.sxy / weight
        else:
            xtx, xty = stats.uncentred()
            hess, xty = xtx / weight, xty / weight
        models, n_iters, missed = [], [], 0
        coef = np.zeros(n_features)
        for value in values:
            problem = Problem(Gaussian(), self._path_penalty(value, l1_ratio, weight), False,
                              n_features)
            coef, converged, n_iter = solve_composite_quadratic(
                hess, hess @ coef - xty, coef, problem, tol=self.tol, max_iter=self.max_iter,
                return_n_iter=True)
            coef = np.asarray(coef, dtype=float)
            intercept = float(stats.mean_y - stats.mean_x @ coef) if self.fit_intercept else 0.0
            missed += not converged
            n_iters.append(int(n_iter))
            models.append((coef, intercept))
        return models, n_iters, missed

    def _check_grid(self):
        if isinstance(self.alphas, (int, np.integer)) and not isinstance(self.alphas, bool):
            if self.alphas < 1:
                raise ValueError(f"alphas must be >= 1 when an integer; got {self.alphas}.")
        else:
            alpha_values(self.alphas)
        if not (isinstance(self.eps, (int, float)) and self.eps > 0):
            raise ValueError(f"eps must be > 0; got {self.eps!r}.")

    def _l1_ratios(self):
        ratios = np.atleast_1d(np.asarray(self.l1_ratio, dtype=np.float64))
        if ratios.ndim != 1 or ratios.size == 0 or np.any((ratios < 0) | (ratios > 1)):
            raise ValueError(f"l1_ratio must be in [0, 1]; got {self.l1_ratio!r}.")
        if np.any(ratios == 0) and isinstance(self.alphas, (int, np.integer)):
            raise ValueError(NO_GRID_FOR_L1_RATIO_0)
        return ratios

    def _grid(self, engine):
        grid = []
        for l1_ratio in self._l1_ratios():
            if isinstance(self.alphas, (int, np.integer)):
                values = _alpha_grid(engine, int(self.alphas), self.eps, l1_ratio,
                                     self.fit_intercept, self.positive)
            else:
                values = alpha_values(self.alphas)
            grid.append((float(l1_ratio), values))
        return grid

    def _path_penalty(self, value, l1_ratio, total_weight):
        penalty = make_penalty("l1" if l1_ratio == 1 else "elasticnet", value, l1_ratio)
        return NonNegative(penalty) if self.positive else penalty

    def _scores(self, held):
        return -held.loss / held.weight

    def get_metadata_routing(self):
        """scikit-learn's metadata routing: ``fit``'s metadata (``groups``) to the
        splitter's ``split``.

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRouter
        """
        return (MetadataRouter(owner=self).add_self_request(self)
                .add(splitter=check_cv(self.cv),
                     method_mapping=MethodMapping().add(caller="fit", callee="split")))

    @records_driver_passes
    def fit(self, X, y, sample_weight=None, **params):
        """Fit every fold's path, choose the penalty, refit on all rows.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
        **params : dict
            Metadata for the splitter (``groups``), routed as scikit-learn routes them;
            only with ``sklearn.set_config(enable_metadata_routing=True)``.

        Returns
        -------
        self
        """
        return self._routed_fit(X, y, sample_weight, params)

    def _routed_fit(self, X, y, sample_weight, params, **fit_params):
        """``_fit`` with the splitter's metadata routed (``params``)."""
        _raise_for_params(params, self, "fit")
        self.__dict__.pop("_split_params", None)
        if _routing_enabled():
            routed = process_routing(self, "fit", sample_weight=sample_weight, **params)
            self._split_params = dict(routed.splitter.split)
        try:
            return self._fit(X, y, sample_weight, **fit_params)
        finally:
            self.__dict__.pop("_split_params", None)
            self.__dict__.pop("_path_offset", None)

    def _fit(self, X, y, sample_weight, offset=None, exposure=None):
        self._check_grid()
        self._l1_ratios()
        scores, grid, (best_l1, best_alpha), _ = self._path_fit(X, y, sample_weight, offset,
                                                                exposure)
        self._cast_fitted()
        self.alpha_ = float(grid[best_l1][1][best_alpha])
        self.l1_ratio_ = float(grid[best_l1][0])
        mse = -scores
        alphas = np.stack([values for _, values in grid])
        single = np.ndim(self.l1_ratio) == 0
        self.mse_path_ = mse[0] if single else mse
        # an explicit grid is the same for every l1_ratio: scikit-learn keeps it 1-D
        explicit = not isinstance(self.alphas, (int, np.integer))
        self.alphas_ = alphas[0] if single or explicit else alphas
        return self

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = False  # one target: the multi-output fit is not here
        return tags


PATH_DOC = """
    eps : float, default=1e-3
        With ``alphas`` an integer, the grid runs from ``alpha_max`` (the smallest alpha
        that zeroes every coefficient, from one gradient round) down to ``eps *
        alpha_max``, log-spaced, as scikit-learn.
    alphas : int or array-like, default=100
        Number of alphas on that grid, or the alphas themselves (each >= 0, fitted from
        the largest).
    cv : int, cross-validation splitter or None, default=None
        Folds on the rows (None: ``KFold(5)``); any splitter, each split scored on its
        own test rows.
    positive : bool, default=False
        Constrain the coefficients to be >= 0 (the grid's ``alpha_max`` then looks at
        the positive correlations only, as scikit-learn).
    n_jobs : int or None, default=None
        Accepted for scikit-learn's signature and ignored: Dask's scheduler sets the
        parallelism over the partitions.
""" + COMMON_DOC + """
    Attributes
    ----------
    alpha_ : float
        The alpha of the smallest mean held-out squared error (weighted by
        ``sample_weight``, as scikit-learn).
    alphas_ : ndarray of shape (n_alphas,) or (n_l1_ratio, n_alphas)
        The grid; 1-D when ``alphas`` is given (the same for every ``l1_ratio``).
    mse_path_ : ndarray of shape (n_alphas, n_folds) or (n_l1_ratio, n_alphas, n_folds)
        Held-out mean squared error of every alpha on every fold.
    coef_, intercept_, n_iter_, converged_, history_, comm_, solver_, n_features_in_
        Those of the final fit on all rows; ``comm_`` holds every round of every fold.
"""


class LassoCV(RegressionPathCV, Lasso):
    __doc__ = (
        """Lasso with ``alpha`` chosen by cross-validation, as
    :class:`sklearn.linear_model.LassoCV`.

    Each fold's path is fitted on its training rows (held-out rows weighing zero, no data
    copied) from the largest alpha down, each fit starting from the previous one; one
    round per fold scores the whole path on its held-out rows.  With ``solver="auto"``
    and at most 1000 columns every fold's Gram statistics come from one round instead and
    the paths are solved and scored on the driver (no round per iteration).

    Parameters
    ----------"""
        + PATH_DOC
    )

    l1_ratio = 1.0

    def __init__(self, *, eps=1e-3, alphas=100, fit_intercept=True, cv=None, solver="auto",
                 tol=1e-4, max_iter=1000, solver_options=None, cache="auto", verbose=0,
                 positive=False, n_jobs=None, missing="error"):
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
        self.n_jobs = n_jobs
        self.missing = missing


class ElasticNetCV(RegressionPathCV, ElasticNet):
    __doc__ = (
        """Elastic net with ``alpha`` and ``l1_ratio`` chosen by cross-validation, as
    :class:`sklearn.linear_model.ElasticNetCV`.

    As :class:`LassoCV`, for every ``l1_ratio``.

    Parameters
    ----------
    l1_ratio : float or array-like of float, default=0.5
        Mixings in [0, 1] to try (0 only with an explicit ``alphas`` grid, as
        scikit-learn); ``l1_ratio_`` is the chosen one."""
        + PATH_DOC
    )

    def __init__(self, *, l1_ratio=0.5, eps=1e-3, alphas=100, fit_intercept=True, cv=None,
                 solver="auto", tol=1e-4, max_iter=1000, solver_options=None, cache="auto",
                 verbose=0, positive=False, n_jobs=None, missing="error"):
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
        self.n_jobs = n_jobs
        self.missing = missing
