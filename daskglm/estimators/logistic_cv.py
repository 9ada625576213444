"""Logistic regression with ``C`` (and ``l1_ratio``) chosen by cross-validation:
:class:`LogisticRegressionCV`, with scikit-learn's fitted attributes.

The folds' paths are fitted by :class:`daskglm.estimators.path_cv.PathCV` (folds as row
weights, one engine).  Held-out scores come from one ``held_out`` round per fold and
l1_ratio for the scorers that are sums over rows (accuracy, log-loss); any other
scikit-learn scorer, or a callable one, is evaluated on the driver on the held-out rows of
in-memory data, exactly as scikit-learn evaluates it.
"""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.linear_model import LogisticRegression as _ScoredModel
from sklearn.metrics import get_scorer, get_scorer_names, make_scorer
from sklearn.model_selection import check_cv
from sklearn.utils import metadata_routing
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _raise_for_params,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.validation import _check_method_params

from ..engine import is_dask
from ..engine.driver_passes import records_driver_passes
from ..model.penalties import L1, L2, make_penalty
from .cv_folds import positive_grid
from .dask_ml_params import dask_ml_parameters
from .docstrings import COMMON_DOC
from .logistic import LogisticRegression
from .path_cv import PathCV

__all__ = ["LogisticRegressionCV"]

#: Scorers that are weighted means over the held-out rows: one ``held_out`` round each.
SUMMED_SCORERS = (None, "accuracy", "neg_log_loss")


def _scorer_with_labels(scorer, classes):
    """``scorer``, told every class (a fold's held-out rows may lack some), as
    scikit-learn does for the metrics that take ``labels``."""
    score_func = getattr(scorer, "_score_func", None)
    if score_func is None:
        return scorer
    parameters = inspect.signature(score_func).parameters
    if "labels" not in parameters:
        return scorer
    extra = {"labels": classes}
    if classes.size == 2 and "pos_label" in parameters:
        extra["pos_label"] = classes[-1]
    return make_scorer(score_func, greater_is_better=scorer._sign == 1,
                       response_method=scorer._response_method, **extra,
                       **getattr(scorer, "_kwargs", {}))


class LogisticRegressionCV(PathCV, LogisticRegression):
    __doc__ = (
        """Logistic regression with ``C`` chosen by cross-validation, as
    :class:`sklearn.linear_model.LogisticRegressionCV` (binary or multinomial).

    Each fold's path is fitted on its training rows (held-out rows weighing zero, no data
    copied) from the first C to the last (``Cs`` as given), each fit starting from the
    previous one; one round per fold scores the path on its held-out rows (accuracy or
    log-loss for every C at once).  With ``refit`` one more fit on all rows follows.

    Parameters
    ----------
    Cs : int or array-like, default=10
        The Cs to try, or their number on ``np.logspace(-4, 4, Cs)``.
    l1_ratios : array-like of float or None, default=None
        Elastic-net mixings in [0, 1] to try (solver ``"proximal"`` for values above 0);
        None is the L2 penalty.
    cv : int, cross-validation splitter or None, default=None
        Folds on the rows (None or an int: stratified k-fold, 5 by default).
    scoring : str, callable or None, default=None
        Held-out score to maximise, weighing the held-out rows by ``sample_weight`` as
        scikit-learn.  None (accuracy), ``"accuracy"`` and ``"neg_log_loss"`` are
        computed where the data live, one ``held_out`` round per fold (on Dask data with
        ``class_weight`` the held-out rows are then weighed by the class weights too).
        Any other name of :func:`sklearn.metrics.get_scorer_names`, or a callable
        ``scorer(estimator, X, y)``, is evaluated on the driver and needs in-memory
        (numpy or sparse) data; so does ``class_weight`` with in-memory data, for
        scikit-learn's weighing.
    refit : bool, default=True
        True: the best mean score over the folds chooses C (and l1_ratio), and one fit on
        all rows gives the coefficients.  False: no final fit; ``coef_`` is the mean over
        the folds of each fold's best model and ``C_`` the mean of their Cs, as
        scikit-learn.
    use_legacy_attributes : bool, default=True
        The shapes of ``C_``, ``l1_ratio_``, ``coefs_paths_``, ``scores_`` and ``n_iter_``:
        True, scikit-learn's dicts and repeated arrays (its default before 1.10); False,
        its plain arrays (see Attributes).
    class_weight : dict, "balanced" or None, default=None
        As :class:`LogisticRegression`.
    random_state : optional
        Accepted for scikit-learn's signature; the solvers draw no random numbers (the
        folds are ``cv``'s)."""
        + COMMON_DOC
        + """
    Attributes
    ----------
    C_ : ndarray of shape (1,) or (n_classes,), or float
        The chosen C, repeated per class as scikit-learn (a float without legacy
        attributes).  With ``refit=False`` the mean of the folds' best Cs.
    l1_ratio_ : ndarray of shape (1,) or (n_classes,), or float
        The chosen l1_ratio (None entries for ``l1_ratios=None``; with ``refit=False`` the
        mean of the folds' best, 0.0 unless the mixings are elastic-net ones, as
        scikit-learn).
    Cs_ : ndarray of shape (n_Cs,)
    l1_ratios_ : ndarray of shape (n_l1_ratios,)
        ``[None]`` for ``l1_ratios=None``.
    coefs_paths_ : dict or ndarray
        Every fold's coefficients with the intercept last: ``{label: ndarray of shape
        (n_folds, n_Cs[, n_l1_ratios], n_features + fit_intercept)}`` (one key, the
        positive class, for two classes); without legacy attributes one array of shape
        ``(n_folds, n_l1_ratios, n_Cs, 1 or n_classes, n_features + fit_intercept)``.
    scores_ : dict or ndarray
        ``{label: ndarray of shape (n_folds, n_Cs[, n_l1_ratios])}``, the same array for
        every class; without legacy attributes ``(n_folds, n_l1_ratios, n_Cs)``.
    n_iter_ : ndarray of shape (1, n_folds, n_Cs[, n_l1_ratios])
        Iterations of every fold's fit at every C (without legacy attributes
        ``(n_folds, n_l1_ratios, n_Cs)``).
    classes_, coef_, intercept_, converged_, history_, comm_, solver_
        Those of the final fit on all rows (``refit=False``: the averaged coefficients,
        ``converged_`` whether every fold's fit converged); ``comm_`` holds every round of
        every fold.
"""
    )

    def __init__(self, *, Cs=10, l1_ratios=None, fit_intercept=True, cv=None, scoring=None,
                 solver="auto", tol=1e-4, max_iter=100, class_weight=None, refit=True,
                 use_legacy_attributes=True, solver_options=None, cache="auto", verbose=0,
                 missing="error", random_state=None):
        self.random_state = random_state
        self.Cs = Cs
        self.l1_ratios = l1_ratios
        self.fit_intercept = fit_intercept
        self.cv = cv
        self.scoring = scoring
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.class_weight = class_weight
        self.refit = refit
        self.use_legacy_attributes = use_legacy_attributes
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.missing = missing

    warm_start = False
    # score's sample_weight goes to the scorer (metadata routing), not to score itself
    __metadata_request__score = {"sample_weight": metadata_routing.UNUSED}

    # the grid ------------------------------------------------------------------------
    def _Cs(self):
        if isinstance(self.Cs, (int, np.integer)) and not isinstance(self.Cs, bool):
            if self.Cs < 1:
                raise ValueError(f"Cs must be >= 1 when an integer; got {self.Cs}.")
            return np.logspace(-4, 4, int(self.Cs))
        return positive_grid(self.Cs, "Cs")

    def _l1_ratio_grid(self):
        if self.l1_ratios is None:
            return [None]
        ratios = np.atleast_1d(np.asarray(self.l1_ratios, dtype=np.float64))
        if ratios.ndim != 1 or ratios.size == 0 or np.any((ratios < 0) | (ratios > 1)):
            raise ValueError(f"l1_ratios must be values in [0, 1]; got {self.l1_ratios!r}.")
        return [float(r) for r in ratios]

    def _grid(self, engine):
        return [(ratio, self._Cs()) for ratio in self._l1_ratio_grid()]

    def _path_penalty(self, value, l1_ratio, total_weight):
        strength = 1.0 / (value * total_weight)
        if l1_ratio is None or l1_ratio == 0:
            return L2(strength)
        if l1_ratio == 1:
            return L1(strength)
        return make_penalty("elasticnet", strength, l1_ratio)

    def _task_of(self):
        return "multinomial" if self._n_classes > 2 else "binary"

    # scoring -------------------------------------------------------------------------
    def _check_scoring(self):
        if callable(self.scoring) or self.scoring in SUMMED_SCORERS:
            return
        if not (isinstance(self.scoring, str) and self.scoring in get_scorer_names()):
            raise ValueError(
                f"scoring must be None, a callable or one of scikit-learn's scorer names "
                f"(sklearn.metrics.get_scorer_names()); got {self.scoring!r}."
            )

    def _keep_for_scoring(self, X, y, sample_weight, folds):
        """Keep in-memory data for the scorers that are not sums over rows."""
        self.__dict__.pop("_scoring_data", None)  # never a previous fit's rows
        routed = self.__dict__.get("_scorer_params")
        on_driver = not (self.scoring in SUMMED_SCORERS and self.class_weight is None
                         and routed is None)
        if not on_driver:
            return
        if is_dask(X) or is_dask(y) or is_dask(sample_weight):
            if self.scoring in SUMMED_SCORERS and routed is None:
                return  # class weights: the held-out round weighs them
            raise ValueError(
                f"scoring={self.scoring!r} is evaluated on the driver and needs in-memory "
                f"(numpy or sparse) data; on Dask data use one of the scorers computed "
                f"where the data live: {', '.join(repr(s) for s in SUMMED_SCORERS)}."
            )
        scorer = get_scorer("accuracy" if self.scoring is None else self.scoring)
        if routed is None:  # without metadata routing the scorer gets sample_weight
            routed = {} if sample_weight is None else {"sample_weight": sample_weight}
        self._scoring_data = (X, np.asarray(y), routed, folds,
                              _scorer_with_labels(scorer, self.classes_))

    def _folds_scores(self, engine, splits, models):
        if "_scoring_data" not in self.__dict__:
            return super()._folds_scores(engine, splits, models)
        return np.stack([self._driver_scores(fold, coefs, intercepts)
                         for fold, (coefs, intercepts) in enumerate(models)], axis=1)

    def _driver_scores(self, fold, coefs, intercepts):
        """The scorer's values of the models ``coefs``/``intercepts`` on the in-memory test
        rows of split ``fold``, on the driver."""
        X, y, params, folds, scorer = self._scoring_data
        test = folds.test_rows(fold)
        X_test, y_test = X[test], y[test]
        extra = _check_method_params(X, params, test)
        model = _ScoredModel()
        model.classes_ = self.classes_
        model.n_features_in_ = X.shape[1]
        scores = []
        for coef, intercept in zip(coefs, intercepts):
            model.coef_ = np.atleast_2d(coef)
            model.intercept_ = _centred(np.atleast_1d(intercept))
            scores.append(scorer(model, X_test, y_test, **extra))
        return np.asarray(scores, dtype=np.float64)

    def _scores(self, held):
        if self.scoring == "neg_log_loss":
            return -held.loss / held.weight
        return held.correct / held.weight

    def _best(self, scores):
        """scikit-learn's choice: the largest sum over folds, ties to the first C, then
        the first l1_ratio."""
        by_c = scores.sum(axis=2).T  # (n_Cs, n_l1_ratios)
        best_c, best_l1 = np.unravel_index(np.argmax(by_c), by_c.shape)
        return int(best_l1), int(best_c)

    def get_metadata_routing(self):
        """scikit-learn's metadata routing: ``fit``'s metadata to the splitter's ``split``
        and the scorer, ``score``'s to the scorer.

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRouter
        """
        return (MetadataRouter(owner=self).add_self_request(self)
                .add(splitter=check_cv(self.cv),
                     method_mapping=MethodMapping().add(caller="fit", callee="split"))
                .add(scorer=get_scorer("accuracy" if self.scoring is None else self.scoring),
                     method_mapping=MethodMapping().add(caller="score", callee="score")
                     .add(caller="fit", callee="score")))

    def score(self, X, y, sample_weight=None, **params):
        """The ``scoring`` score of the fitted model on ``X``, ``y`` (accuracy for None),
        as scikit-learn; on Dask data accuracy and log-loss only (computed lazily).

        ``params`` (and ``sample_weight``) reach the scorer through scikit-learn's
        metadata routing when it is enabled; without it ``sample_weight`` is passed on
        and other ``params`` are refused, as scikit-learn."""
        _raise_for_params(params, self, "score")
        if _routing_enabled():
            if sample_weight is not None:
                params["sample_weight"] = sample_weight
            routed = process_routing(self, "score", **params)
            extra = dict(routed.scorer.score)
            if not any(is_dask(a) for a in (X, y, *extra.values())):
                scorer = get_scorer("accuracy" if self.scoring is None else self.scoring)
                return float(scorer(self, X, y, **extra))
            sample_weight = extra.pop("sample_weight", None)
            if extra:
                raise ValueError("metadata other than sample_weight needs in-memory data.")
        if self.scoring in (None, "accuracy"):
            return super().score(X, y, sample_weight)
        extra = {} if sample_weight is None else {"sample_weight": sample_weight}
        if not (is_dask(X) or is_dask(y) or is_dask(sample_weight)):
            return float(get_scorer(self.scoring)(self, X, y, **extra))
        if self.scoring != "neg_log_loss":
            raise ValueError(f"score with scoring={self.scoring!r} needs in-memory data; on "
                             f"Dask data: None, 'accuracy' or 'neg_log_loss'.")
        return _dask_neg_log_loss(self, X, y, sample_weight)

    # fit -----------------------------------------------------------------------------
    @records_driver_passes
    def fit(self, X, y, sample_weight=None, **params):
        """Fit every fold's path, choose C (and l1_ratio), refit on all rows.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        sample_weight : array-like or Dask array of shape (n_samples,), optional
        **params : dict
            Metadata for the splitter (``groups``) and the scorer, routed as scikit-learn
            routes them; only with ``sklearn.set_config(enable_metadata_routing=True)``.
            Routed scorer metadata are scored on the driver (in-memory data).

        Returns
        -------
        self
        """
        _raise_for_params(params, self, "fit")
        self.__dict__.pop("_scorer_params", None)
        self.__dict__.pop("_split_params", None)
        if _routing_enabled():
            routed = process_routing(self, "fit", sample_weight=sample_weight, **params)
            self._split_params = dict(routed.splitter.split)
            scorer_params = dict(routed.scorer.score)
            if scorer_params.keys() != ({"sample_weight"} if sample_weight is not None else set()):
                self._scorer_params = scorer_params  # not what the held-out round weighs
        try:
            with dask_ml_parameters(self):  # scikit-learn's solver names as daskglm's
                return self._fit(X, y, sample_weight)
        finally:
            self.__dict__.pop("_scorer_params", None)
            self.__dict__.pop("_split_params", None)

    def _fit(self, X, y, sample_weight):
        self._check_scoring()
        self._Cs()
        ratios = self._l1_ratio_grid()
        scores, grid, (best_l1, best_c), paths = self._path_fit(X, y, sample_weight)
        self.Cs_ = grid[0][1]
        self.l1_ratios_ = np.asarray(ratios)
        # every fold's models: (n_folds, n_Cs, n_l1_ratios, 1 or n_classes, n_dof)
        models = np.stack([np.stack([self._path_rows(*paths[k][fold][:2])
                                     for k in range(len(ratios))], axis=1)
                           for fold in range(scores.shape[2])])
        n_iter = np.stack([np.stack([paths[k][fold][2] for k in range(len(ratios))], axis=1)
                           for fold in range(scores.shape[2])])  # (n_folds, n_Cs, n_l1)
        per_fold = np.transpose(scores, (2, 1, 0))  # (n_folds, n_Cs, n_l1_ratios)
        if self.refit:
            chosen_c, chosen_l1 = self.Cs_[best_c], ratios[best_l1]
        else:
            chosen_c, chosen_l1 = self._average_best_folds(per_fold, models, ratios)
        self._set_cv_attributes(chosen_c, chosen_l1, models, per_fold, n_iter)
        self._cast_fitted()
        return self

    def _path_rows(self, coefs, intercepts):
        """A fold's path as ``(n_Cs, 1 or n_classes, n_features + fit_intercept)``."""
        coefs = coefs.reshape(coefs.shape[0], -1, coefs.shape[-1])
        if not self.fit_intercept:
            return coefs
        intercepts = _centred(intercepts.reshape(coefs.shape[0], -1))
        return np.concatenate([coefs, intercepts[:, :, None]], axis=2)

    def _average_best_folds(self, per_fold, models, ratios):
        """``refit=False``: the mean over folds of each fold's best model as ``coef_``;
        the mean of their C and l1_ratio (0.0 unless elastic-net), as scikit-learn."""
        n_folds, n_cs, n_l1 = per_fold.shape
        best_c, best_l1 = np.unravel_index(np.argmax(per_fold.reshape(n_folds, -1), axis=1),
                                           (n_cs, n_l1))
        w = models[np.arange(n_folds), best_c, best_l1].mean(axis=0)  # (rows, n_dof)
        d = self.n_features_in_
        self.coef_ = w[:, :d]
        self.intercept_ = w[:, d] if self.fit_intercept else np.zeros(w.shape[0])
        mixings = np.asarray([0.0 if r is None else r for r in ratios])
        elastic = self.l1_ratios is not None and not (np.all(mixings == 0)
                                                      or np.all(mixings == 1))
        return (float(np.mean(self.Cs_[best_c])),
                float(np.mean(mixings[best_l1])) if elastic else 0.0)

    def _set_cv_attributes(self, chosen_c, chosen_l1, models, per_fold, n_iter):
        """``C_``, ``l1_ratio_``, ``coefs_paths_``, ``scores_``, ``n_iter_`` in scikit-learn's
        shapes (legacy or not)."""
        grid_of_mixings = self.l1_ratios is not None
        if not self.use_legacy_attributes:
            self.C_ = float(chosen_c)
            self.l1_ratio_ = float(chosen_l1) if chosen_l1 is not None else 0.0
            self.coefs_paths_ = np.moveaxis(models, 2, 1)
            self.scores_ = np.moveaxis(per_fold, 2, 1)
            self.n_iter_ = np.moveaxis(n_iter, 2, 1)
            return
        rows = 1 if self._n_classes == 2 else self._n_classes
        self.C_ = np.full(rows, chosen_c, dtype=np.float64)
        self.l1_ratio_ = np.full(rows, chosen_l1,
                                 dtype=object if chosen_l1 is None else np.float64)
        labels = self.classes_[1:] if self._n_classes == 2 else self.classes_
        if not grid_of_mixings:
            models, per_fold, n_iter = models[:, :, 0], per_fold[:, :, 0], n_iter[:, :, 0]
        self.coefs_paths_ = {label: models[..., k, :] for k, label in enumerate(labels)}
        self.scores_ = {label: per_fold.copy() for label in labels}
        self.n_iter_ = n_iter[None]


def _centred(intercepts):
    """Multinomial intercepts shifted to sum to zero (the model is unchanged), as
    scikit-learn reports them; a single intercept as it is."""
    if intercepts.shape[-1] < 2:
        return intercepts
    return intercepts - intercepts.mean(axis=-1, keepdims=True)


def _true_class_log_proba(log_proba, labels, classes):
    """The log-probability of each row's class; ``labels`` of shape (rows, 1)."""
    labels = labels[:, 0]
    return log_proba[np.arange(labels.shape[0]), np.searchsorted(classes, labels)]


def _dask_neg_log_loss(model, X, y, sample_weight):
    """Minus the weighted mean log-loss of ``model`` on Dask data, as one computation."""
    import dask
    import dask.array as da

    log_proba = model.predict_log_proba(X)
    labels = da.asarray(y).rechunk({0: log_proba.chunks[0]})[:, None]
    chosen = da.map_blocks(_true_class_log_proba, log_proba, labels, model.classes_,
                           drop_axis=1, dtype=np.float64)
    if sample_weight is None:
        return float(chosen.mean().compute())
    weight = da.asarray(sample_weight).rechunk({0: log_proba.chunks[0]})
    total, weighted = dask.compute(weight.sum(), (weight * chosen).sum())
    return float(weighted / total)
