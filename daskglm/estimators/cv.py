"""Regularisation paths chosen by cross-validation: :class:`RidgeCV`, :class:`LassoCV`,
:class:`ElasticNetCV` and :class:`LogisticRegressionCV`.

Folds are sets of rows of the data as they are: each row carries the index of the fold
that holds it out (from a scikit-learn splitter), and a fit on the other folds is a fit
whose held-out rows weigh zero (:class:`daskglm.engine.folds.TrainingView`), so one
engine, validated once, serves every fold, and nothing is copied.

- :class:`RidgeCV` (defined in :mod:`daskglm.estimators.ridge_cv`) reads ``X`` once for
  k folds: one round returns the Gram statistics of every fold; every training set's
  statistics are sums of them, and the whole path of every fold is solved on the driver
  ("compute once, solve many").
- The others fit each fold's path from the strongest penalty to the weakest, each fit
  starting from the previous solution, then score every fold's path on its held-out rows
  in one round, and refit on all rows with the best setting.  The folds' paths run side
  by side, their rounds shared (:class:`daskglm.engine.folds.SharedRounds`).
  :class:`LassoCV` and :class:`ElasticNetCV` (squared loss, ``solver="auto"``, at most
  :data:`GRAM_PATH_MAX_FEATURES` columns) take every fold's Gram statistics from one
  round instead, as :class:`RidgeCV`, and solve and score every path on the driver.
"""

from __future__ import annotations

import functools
import numbers
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils import check_scalar
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _raise_for_params,
    _routing_enabled,
    process_routing,
)

from .. import progress
from ..accounting.kinds import Kind
from ..compute.blocked import pointwise_for
from ..compute.folds import fold_grams, held_out_errors_of_splits
from ..engine.cache import kept_copies
from ..engine.driver_passes import records_driver_passes
from ..engine.folds import SharedRounds, TrainingView, shared_assignments
from ..model.families import Gaussian
from ..model.penalties import NonNegative, make_penalty
from ..solvers import Problem, get_solver
from ..solvers.options import options_dict
from ..solvers.proximal import solve_composite_quadratic
from . import base
from .auto_choice import AUTO_CHOICES, choose_solver
from .base import _COMMON_DOC, _coef_dtype
from .cv_folds import _assign_folds
from .inference import _check_offset, _null_model_with_offset
from .linear import GLM, ElasticNet, Lasso
from .ridge_cv import RidgeCV
from .validation import _with_known_rows

__all__ = ["RidgeCV", "LassoCV", "ElasticNetCV", "LogisticRegressionCV"]

# LogisticRegressionCV (defined in logistic_cv.py) is imported at the end: it builds on _PathCV.


# paths fitted fold by fold ------------------------------------------------------------
class _PathCV:
    """Fit each fold's path on its training rows, score it on the held-out rows, refit."""

    _task = "regression"

    def _grid(self, engine):
        """``[(l1_ratio, penalty values in path order)]``."""
        raise NotImplementedError

    def _path_penalty(self, value, l1_ratio, total_weight):
        raise NotImplementedError

    def _scores(self, held):
        """Held-out scores (higher is better) of the models of one fold."""
        raise NotImplementedError

    def _rescalable(self):
        return False

    def _keep_for_scoring(self, X, y, sample_weight, folds):
        """Hook: the validated data, for estimators that score on the driver."""

    def _folds_scores(self, engine, splits, models):
        """Held-out scores ``(n_models, n_splits)`` of every split's models (``models[s] =
        (coefs, intercepts)``) on its test rows: one round for all the splits."""
        each, indices = shared_assignments(engine, [test_codes for _, _, test_codes, _ in splits])
        requests = tuple((index, test_fold, coefs, intercepts) for index, (_, _, _, test_fold),
                         (coefs, intercepts) in zip(indices, splits, models))
        held = engine.reduce_each(held_out_errors_of_splits, each, requests, self._task_of(),
                                  kind=Kind.HELD_OUT)
        return np.stack([self._scores(result) for result in held.results], axis=1)

    def _best(self, scores):
        """Indices ``(l1_ratio, value)`` of the best mean held-out score."""
        best = np.unravel_index(np.argmax(scores.mean(axis=2)), scores.shape[:2])
        return int(best[0]), int(best[1])

    def _path_fit(self, X, y, sample_weight, offset=None, exposure=None):
        """Validate, fit every fold's path on one engine, choose, refit on all rows
        (unless ``refit`` is False).

        Returns the held-out scores ``(n_l1_ratios, n_values, n_folds)``, the grid
        ``[(l1_ratio, values)]``, the indices of the chosen ``(l1_ratio, value)`` and the
        paths: ``paths[l1_ratio][fold] = (coefs, intercepts, n_iters)``, one entry per
        value.
        """
        self._check_params()
        X, y, sample_weight, blocks = self._checked_input(X, y, sample_weight)
        self._fit_dtype = _coef_dtype(X)
        X, y, sample_weight = _with_known_rows(X, y, sample_weight)
        offset = _check_offset(self, offset, exposure, X, self._family())
        self._path_offset = offset is not None
        raw_y = y
        labels = self._labels_for_engine(y, None)
        if labels is None:
            y = self._prepare_target(y)
        folds = _assign_folds(self.cv, y, X.shape[0], classifier=self._classifier,
                              split_params=self.__dict__.get("_split_params"))
        n_folds = folds.n_folds
        self._keep_for_scoring(X, raw_y, sample_weight, folds)
        sample_weight = self._weigh_samples(y, sample_weight, labels)
        n_features = int(X.shape[1])
        refit = getattr(self, "refit", True)
        result = None
        engine_X = blocks() if blocks is not None and self._reads_blocks(labels) else X
        with self._engine(engine_X, y, sample_weight, self._family(), offset=offset,
                          labels=labels) as engine:
            if labels is not None:
                self._classes_from_engine(engine, labels)
            splits = folds.on(engine)
            grid = self._grid(engine)
            # "auto" chooses per l1_ratio: 0 (smooth) and > 0 (non-smooth) need different solvers
            names = [self._path_solver(l1_ratio, values[0], n_features, engine.n_samples)
                     for l1_ratio, values in grid]
            # the folds' Gram statistics hold no offset: the paths then run through the engine
            grams = None if offset is not None else self._fold_grams(engine, folds, splits,
                                                                     n_features)
            scores = np.empty((len(grid), len(grid[0][1]), n_folds))
            paths = [[None] * n_folds for _ in grid]
            unconverged = 0
            label = "/".join(dict.fromkeys(names))
            with progress.watch(f"{type(self).__name__}({label})", self.max_iter, self.verbose):
                if grams is None:
                    fitted = self._fit_paths_side_by_side(engine, splits, grid, names,
                                                          n_features)
                for i, (l1_ratio, values) in enumerate(grid):
                    for fold in range(n_folds):
                        if grams is not None:
                            models, n_iters, missed = self._fit_path_on_gram(
                                grams[fold][0], values, l1_ratio, n_features)
                        else:
                            models, n_iters, missed = fitted[i][fold]
                        unconverged += missed
                        coefs = np.stack([coef for coef, _ in models])
                        intercepts = np.stack([np.asarray(b, dtype=float) for _, b in models])
                        paths[i][fold] = (coefs, intercepts, np.asarray(n_iters, dtype=np.int32))
                        if grams is not None:
                            scores[i, :, fold] = _gram_scores(grams[fold][1], coefs, intercepts)
                    if grams is None:
                        scores[i] = self._folds_scores(engine, splits,
                                                       [path[:2] for path in paths[i]])
                best_l1, best_value = self._best(scores)
                l1_ratio, values = grid[best_l1]
                name = names[best_l1]
                problem = self._problem(
                    self._path_penalty(values[best_value], l1_ratio, engine.sum_weight), n_features,
                    offset is not None)
                if refit:
                    solver = get_solver(name, problem, tol=self.tol, max_iter=self.max_iter,
                                        options=options_dict(self.solver_options, name))
                    result = solver.solve(problem, engine, self._start(problem))
            self.comm_ = engine.ledger
            self.comm_.method = name
        self.__dict__.pop("_scoring_data", None)
        self.__dict__.pop("_path_offset", None)
        if refit:
            self._record_fit(problem, result)
        self.solver_ = name
        if unconverged:
            warnings.warn(
                f"{unconverged} of the fold fits did not reach tol with solver {name!r}; "
                f"increase max_iter or tol.", ConvergenceWarning, stacklevel=3)
        if refit and not self.converged_:
            warnings.warn(f"Solver {name!r} did not converge on the final fit "
                          f"({result.message}).", ConvergenceWarning, stacklevel=3)
        if not refit:
            self.converged_ = unconverged == 0
            self.history_ = []
        return scores, grid, (best_l1, best_value), paths

    def _reads_blocks(self, labels):
        """Whether the paths' kernels read a table's categorical blocks: the solvers of
        :data:`~.categorical.BLOCK_SOLVERS` (``"auto"`` chooses among them), a family
        with compiled loops, and no class labels (whose multinomial model reads CSR)."""
        solver = self.solver
        choices = AUTO_CHOICES if solver == "auto" else (solver,)
        return (labels is None and pointwise_for(self._family()) is not None
                and set(choices) <= set(base.BLOCK_SOLVERS)
                and not (options_dict(self.solver_options, solver) or {}).get("sharded")
                and kept_copies() == "exact")

    def _path_solver(self, l1_ratio, value, n_features, n_samples):
        """The solver of the path at ``l1_ratio``: ``solver``, or what ``"auto"`` chooses
        for that grid point's penalty."""
        if self.solver != "auto":
            return self.solver
        problem = self._problem(self._path_penalty(value, l1_ratio, 1.0), n_features,
                                self.__dict__.get("_path_offset", False))
        return choose_solver(problem, n_samples, self.tol)

    def _task_of(self):
        return self._task

    def _fold_grams(self, engine, folds, splits, n_features):
        """Hook: ``[(training rows' GramStats, test rows' GramStats)]`` per split, when the
        paths are solved on the driver from Gram statistics; None otherwise."""
        return None

    def _start(self, problem):
        params = np.zeros(problem.n_params)
        if problem.fit_intercept and not hasattr(problem, "n_classes"):
            params[-1] = problem.family.start_intercept()
        return params

    def _fit_paths_side_by_side(self, engine, splits, grid, names, n_features):
        """The path of every split and every ``l1_ratio`` of ``grid`` (:meth:`_fit_path`;
        ``fitted[i][fold]``), all of them run side by side with their rounds shared
        (:class:`~daskglm.engine.folds.SharedRounds`): one shared round for the folds'
        moments, then the paths.  One after the other with Dask's config key
        ``daskglm.shared-fold-rounds`` set to False."""
        import dask

        if not dask.config.get("daskglm.shared-fold-rounds", True):
            return [[self._fit_path(names[i], TrainingView(engine, train_codes, train_fold),
                                    values, l1_ratio, n_features)
                     for train_codes, train_fold, _, _ in splits]
                    for i, (l1_ratio, values) in enumerate(grid)]
        rounds = SharedRounds(engine)
        views = rounds.run([functools.partial(TrainingView, engine, train_codes, train_fold,
                                              rounds)
                            for train_codes, train_fold, _, _ in splits])
        fits = [functools.partial(self._fit_path, names[i], view, values, l1_ratio, n_features)
                for i, (l1_ratio, values) in enumerate(grid) for view in views]
        paths = rounds.run(fits)
        return [paths[i * len(views):(i + 1) * len(views)] for i in range(len(grid))]

    def _fit_path(self, name, view, values, l1_ratio, n_features):
        """The models ``(coef, intercept)`` along ``values`` on one fold's training rows,
        each fit started from the previous one; their iteration counts; and how many
        missed ``tol``."""
        models, n_iters, missed, params = [], [], 0, None
        for value in values:
            problem = self._problem(self._path_penalty(value, l1_ratio, view.sum_weight),
                                    n_features, self.__dict__.get("_path_offset", False))
            solver = get_solver(name, problem, tol=self.tol, max_iter=self.max_iter,
                                options=options_dict(self.solver_options, name))
            result = solver.solve(problem, view, self._start(problem) if params is None else params)
            params = np.asarray(result.params, dtype=float)
            missed += not result.converged
            n_iters.append(int(result.n_iter))
            models.append(problem.split(params))
        return models, n_iters, missed


_NO_GRID_FOR_L1_RATIO_0 = (
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


def _gram_scores(stats, coefs, intercepts):
    """Minus the weighted mean squared error of each model on the rows of ``stats``."""
    shift = stats.mean_y - coefs @ stats.mean_x - intercepts
    quadratic = np.einsum("ai,ij,aj->a", coefs, stats.sxx, coefs)
    errors = stats.syy - 2.0 * coefs @ stats.sxy + quadratic + stats.weight * shift**2
    return -errors / stats.weight


def _alpha_grid(engine, n_alphas, eps, l1_ratio, fit_intercept, positive=False):
    """scikit-learn's grid: ``n_alphas`` values from ``alpha_max`` down to ``eps alpha_max``,
    ``alpha_max = max |X_c^T W y_c| / (sum(w) l1_ratio)`` (``max(0, max X_c^T W y_c)`` when
    ``positive``); one gradient round at zero."""
    from ..compute.kernels import loss_grad

    if l1_ratio == 0:
        raise ValueError(_NO_GRID_FOR_L1_RATIO_0)
    d = engine.n_features
    stats = engine.reduce(loss_grad, np.zeros(d + 1), Gaussian(), True, kind=Kind.GRADIENT)
    xty = -stats.grad[:d]  # X^T W y
    if fit_intercept:
        mean_y = -stats.grad[-1] / engine.sum_weight
        xty = xty - mean_y * engine.column_moments.sums
    largest = max(0.0, np.max(xty)) if positive else np.max(np.abs(xty))
    alpha_max = largest / (engine.sum_weight * l1_ratio)
    if alpha_max <= np.finfo(float).resolution:
        return np.full(n_alphas, np.finfo(float).resolution)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


def _alpha_values(alphas):
    """An explicit ``alphas`` grid checked as scikit-learn checks it (each a real >= 0),
    from the largest down."""
    for index, alpha in enumerate(alphas):
        check_scalar(alpha, f"alphas[{index}]", target_type=numbers.Real, min_val=0.0,
                     include_boundaries="left")
    return np.sort(np.asarray(alphas, dtype=np.float64))[::-1]


class _RegressionPathCV(_PathCV):
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
            each = splits[0][0]
            grams = engine.reduce_each(fold_grams, each, folds.n_folds,
                                       kind=Kind.FOLD_GRAM).folds
            return [(_sum_stats([g for other, g in enumerate(grams) if other != fold]),
                     grams[fold]) for fold in range(folds.n_folds)]
        pairs = []
        for train_codes, _, test_codes, _ in splits:
            # codes: training rows 0 (the others 1); test rows 1 (the others 0)
            training = engine.reduce_each(fold_grams, train_codes, 1, kind=Kind.FOLD_GRAM)
            test = engine.reduce_each(fold_grams, test_codes, 2, kind=Kind.FOLD_GRAM)
            pairs.append((training.folds[0], test.folds[1]))
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
            _alpha_values(self.alphas)
        if not (isinstance(self.eps, (int, float)) and self.eps > 0):
            raise ValueError(f"eps must be > 0; got {self.eps!r}.")

    def _l1_ratios(self):
        ratios = np.atleast_1d(np.asarray(self.l1_ratio, dtype=np.float64))
        if ratios.ndim != 1 or ratios.size == 0 or np.any((ratios < 0) | (ratios > 1)):
            raise ValueError(f"l1_ratio must be in [0, 1]; got {self.l1_ratio!r}.")
        if np.any(ratios == 0) and isinstance(self.alphas, (int, np.integer)):
            raise ValueError(_NO_GRID_FOR_L1_RATIO_0)
        return ratios

    def _grid(self, engine):
        grid = []
        for l1_ratio in self._l1_ratios():
            if isinstance(self.alphas, (int, np.integer)):
                values = _alpha_grid(engine, int(self.alphas), self.eps, l1_ratio,
                                     self.fit_intercept, self.positive)
            else:
                values = _alpha_values(self.alphas)
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


_PATH_DOC = """
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
""" + _COMMON_DOC + """
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


class LassoCV(_RegressionPathCV, Lasso):
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
        + _PATH_DOC
    )

    l1_ratio = 1.0

    def __init__(self, *, eps=1e-3, alphas=100, fit_intercept=True, cv=None, solver="auto",
                 tol=1e-4, max_iter=1000, solver_options=None, cache="auto", verbose=0,
                 positive=False, missing="error"):
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


class ElasticNetCV(_RegressionPathCV, ElasticNet):
    __doc__ = (
        """Elastic net with ``alpha`` and ``l1_ratio`` chosen by cross-validation, as
    :class:`sklearn.linear_model.ElasticNetCV`.

    As :class:`LassoCV`, for every ``l1_ratio``.

    Parameters
    ----------
    l1_ratio : float or array-like of float, default=0.5
        Mixings in [0, 1] to try (0 only with an explicit ``alphas`` grid, as
        scikit-learn); ``l1_ratio_`` is the chosen one."""
        + _PATH_DOC
    )

    def __init__(self, *, l1_ratio=0.5, eps=1e-3, alphas=100, fit_intercept=True, cv=None,
                 solver="auto", tol=1e-4, max_iter=1000, solver_options=None, cache="auto",
                 verbose=0, positive=False, missing="error"):
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


def _glm_alpha_grid(engine, family, n_alphas, eps, l1_ratio, fit_intercept, positive=False,
                    has_offset=False):
    """The grid of a GLM path: ``n_alphas`` values from ``alpha_max`` down to ``eps
    alpha_max``, ``alpha_max`` the largest gradient entry of the mean loss at the model with
    no coefficients (the intercept at ``g(weighted mean of y)``, the intercept-only
    optimum of every family and link; with an offset, that optimum found by Newton steps
    on the intercept, one round each; zero without an intercept), over ``l1_ratio``: the
    smallest alpha at which every coefficient is zero.  One gradient round (and one for
    the mean target when the validation round's is gone)."""
    from ..compute.kernels import loss_grad

    if l1_ratio == 0:
        raise ValueError(_NO_GRID_FOR_L1_RATIO_0)
    d = engine.n_features
    params = np.zeros(d + 1 if fit_intercept else d)
    if fit_intercept:
        sums = engine.target_sums
        if sums is None:
            from ..compute.inference import target_moments

            sums = engine.reduce(target_moments, kind=Kind.TARGET_MEAN)
            sums = (sums.target, sums.offset)
        means = (float(sums[0]) / engine.sum_weight, float(sums[1]) / engine.sum_weight)
        if has_offset:
            params[-1] = _null_model_with_offset(engine, family, means)[0]
        else:
            params[-1] = float(np.asarray(family.link.link(np.array([means[0]])))[0])
    stats = engine.reduce(loss_grad, params, family, fit_intercept, kind=Kind.GRADIENT)
    grad = stats.grad[:d] / engine.sum_weight
    largest = max(0.0, np.max(-grad)) if positive else np.max(np.abs(grad))
    alpha_max = largest / l1_ratio
    if not alpha_max > np.finfo(float).resolution:
        return np.full(n_alphas, np.finfo(float).resolution)
    return np.geomspace(alpha_max, alpha_max * eps, num=n_alphas)


class GLMCV(_RegressionPathCV, GLM):
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
        + _PATH_DOC.replace(
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
                values = _alpha_values(self.alphas)
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
    return isinstance(family, Gaussian) and family.canonical


from .logistic_cv import LogisticRegressionCV  # noqa: E402  (it subclasses _PathCV)
