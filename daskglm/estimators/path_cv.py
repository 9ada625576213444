"""Regularisation paths fitted fold by fold: :class:`PathCV`, the base of the path
estimators chosen by cross-validation (:mod:`.cv`, :mod:`.glm_cv`, :mod:`.logistic_cv`).

Folds are sets of rows of the data as they are: each row carries the index of the fold
that holds it out (from a scikit-learn splitter), and a fit on the other folds is a fit
whose held-out rows weigh zero (:class:`daskglm.engine.folds.TrainingView`), so one
engine, validated once, serves every fold, and nothing is copied.  Each fold's path is
fitted from the strongest penalty to the weakest, each fit starting from the previous
solution, then every fold's path is scored on its held-out rows in one round, and the
best setting refitted on all rows.  The folds' paths run side by side, their rounds shared
(:class:`daskglm.engine.folds.SharedRounds`); a subclass may instead solve every path on
the driver from the folds' Gram statistics (``_fold_grams``).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .. import progress
from ..compute.blocked import pointwise_for
from ..engine.cache import kept_copies
from ..engine.folds import SharedRounds, TrainingView
from ..fitting.cross_validation import held_out_errors
from ..solvers import get_solver
from ..solvers.options import options_dict
from . import planning
from .auto_choice import AUTO_CHOICES, choose_solver
from .cv_folds import assign_folds
from .fit_input import coef_dtype
from .offsets import check_offset
from .validation import each_with_known_rows

__all__ = ["PathCV"]


class PathCV:
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
        held = held_out_errors(engine, splits, models, self._task_of())
        return np.stack([self._scores(result) for result in held], axis=1)

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
        self._fit_dtype = coef_dtype(X)
        X, y, sample_weight = each_with_known_rows(X, y, sample_weight)
        offset = check_offset(self, offset, exposure, X, self._family())
        self._path_offset = offset is not None
        raw_y = y
        labels = self._labels_for_engine(y, None)
        if labels is None:
            y = self._prepare_target(y)
        folds = assign_folds(self.cv, y, X.shape[0], classifier=self._classifier,
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
                and set(choices) <= set(planning.BLOCK_SOLVERS)
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


def _gram_scores(stats, coefs, intercepts):
    """Minus the weighted mean squared error of each model on the rows of ``stats``."""
    shift = stats.mean_y - coefs @ stats.mean_x - intercepts
    quadratic = np.einsum("ai,ij,aj->a", coefs, stats.sxx, coefs)
    errors = stats.syy - 2.0 * coefs @ stats.sxy + quadratic + stats.weight * shift**2
    return -errors / stats.weight
