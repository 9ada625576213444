"""The parameters and attributes the docstrings of both SGD estimators share.

:data:`SGD_DOC` is a numpydoc section of parameters and attributes, with the defaults that
differ between :class:`~daskglm.SGDRegressor` and :class:`~daskglm.SGDClassifier`
(``learning_rate``, ``eta0``, ``power_t``) left as ``%``-format fields.
"""

__all__ = ["SGD_DOC"]

SGD_DOC = """
    penalty : {"l2", "l1", "elasticnet"} or None, default="l2"
        ``R(coef)``: ``||coef||^2 / 2``, ``||coef||_1`` or ``l1_ratio * ||coef||_1 +
        (1 - l1_ratio) / 2 * ||coef||^2``.  The L2 part enters through the gradient, the
        L1 part through a soft-thresholding step after each update.
    alpha : float, default=0.0001
        Penalty strength, >= 0 (> 0 for ``learning_rate="optimal"``), in scikit-learn's
        objective ``sum(sample_weight * loss) / n_samples + alpha * R(coef)`` (class
        weights multiply the sample weights).  The solvers minimise the weighted mean
        loss, so with weights they take ``alpha * n_samples / sum(weights)``, which has
        the same minimiser; their steps on the ``"constant"``, ``"invscaling"`` and
        ``"adaptive"`` rates are then ``n_samples / sum(weights)`` times as long as
        scikit-learn's (``"optimal"`` has ``alpha`` in its rate, ``"adagrad"`` is free
        of the scale).
    l1_ratio : float, default=0.15
        Elastic-net mixing in [0, 1], used with ``penalty="elasticnet"``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept.
    max_iter : int, default=1000
        Most epochs; an epoch is ``ceil(n_samples / batch_size)`` steps.
    early_stopping : bool, default=False
        scikit-learn's early stopping: hold out ``validation_fraction`` of the rows
        (scikit-learn's ``ShuffleSplit``, stratified for the classifier, seeded by
        ``random_state``), train on the others, and after every epoch score the held-out
        rows (accuracy, or R^2 for the regressor, weighted by ``sample_weight``) in one
        round of their own (``validation_score``); ``fit`` stops after
        ``n_iter_no_change`` epochs whose score is below the best so far plus ``tol``.
        Needs ``solver="sgd"`` and NumPy labels for the classifier; ``partial_fit``
        raises with it, as scikit-learn's.
    validation_fraction : float, default=0.1
        Share of the rows held out with ``early_stopping``, in (0, 1).
    tol : float or None, default=1e-3
        scikit-learn's stopping rule (with ``early_stopping=False``): the objective of an
        epoch is the sum over its rows of the sample weight times the row's loss, divided
        by ``n_samples``, plus ``alpha * R(coef)``, both at the iterate before the step
        that uses the row
        (the current iterate, not the running mean of ``average``); an epoch whose
        objective is above the best so far minus ``tol`` makes no improvement, and ``fit``
        stops after ``n_iter_no_change`` such epochs in a row.  Every row enters each epoch
        exactly once, so the estimate has no sampling noise from the draws, and with
        ``batch_size=1`` and no sample weights it is scikit-learn's number (scikit-learn
        leaves the sample weights out of it).  None runs every epoch.
    learning_rate : {"constant", "invscaling", "optimal", "adagrad", "adaptive"}, \
default="%(learning_rate)s"
        ``eta0``, ``eta0 / (t + 1) ** power_t``, ``1 / (alpha * (t0 + t))`` with
        scikit-learn's ``t0``, Adagrad's per-coefficient ``eta0 / sqrt(sum of squared
        gradients)``, where ``t`` counts steps from 0, or scikit-learn's ``"adaptive"``:
        ``eta0`` while the stopping rule sees improvement, divided by 5 each time it would
        stop, and the fit stops once the rate is at most 1e-6.
    eta0 : float, default=%(eta0)s
        Initial learning rate, > 0 unless ``learning_rate="optimal"``.
    power_t : float, default=%(power_t)s
        Exponent of ``"invscaling"``.
    average : bool or int, default=False
        Polyak-Ruppert averaging: ``coef_`` and ``intercept_`` are the mean of the iterates,
        from the first step (True) or from the step at which ``average`` rows have been
        drawn (an int).
    random_state : int, RandomState, Generator or None, default=None
        Seed of the row draws; a fit is reproducible for a fixed int and does not depend
        on the number of workers.
    n_iter_no_change : int, default=5
        Epochs without improvement before stopping.
    shuffle : bool, default=True
        Visit the rows of each epoch in a random order (scikit-learn's shuffling before
        each epoch); False visits them in their order every epoch: the partitions one
        after the other, each from its first row, as scikit-learn's ``shuffle=False``
        (``solver="sgd"`` only).
    batch_size : int, default=16
        Rows per step.  Each epoch visits every row once in a random order (scikit-learn's
        shuffling), over all partitions; the last step of an epoch takes the rows that
        are left.  Synchronous SGD costs one communication round per step, which is why
        ``sync_every="auto"`` takes several local steps per round on a cluster; small
        batches make more progress per epoch, which ``tol`` measures.
        scikit-learn steps once per row: ``batch_size=1`` follows its trajectory (as many
        steps per epoch, so ``max_iter`` means the same), at about 14 times the time per
        epoch of the default in memory.
    sync_every : int, None or "auto", default="auto"
        Local SGD: every partition takes ``sync_every`` steps on its own rows between two
        averaging rounds.  None (or 1, up to round-off) is synchronous mini-batch SGD.
        ``"auto"``: on a Dask cluster, local SGD with enough steps per round that a
        round's compute is at least 10 times its measured fixed cost (messages,
        scheduling), at most an epoch; synchronous SGD in this process (where in-memory
        ``X`` is one partition: an epoch is one compiled call, as scikit-learn's SGD
        takes its steps, where several partitions would take a round per step).  The value chosen
        and why are in ``solver_options_`` and ``comm_.choices``; it depends on timings,
        so pass it back to repeat a fit bit for bit.
    solver : {"sgd", "async", "gossip"}, default="sgd"
        ``"sgd"``: synchronous or local mini-batch SGD (:class:`daskglm.solvers.sgd.SGD`);
        ``"async"``: parameter-server SGD, asynchronous or stale-synchronous
        (:class:`daskglm.solvers.asynchronous.AsyncSGD`); ``"gossip"``: decentralised SGD
        on a graph of the partitions (:class:`daskglm.solvers.gossip.Gossip`).  The
        options above are passed to each; ``average`` and ``sync_every`` are
        ``"sgd"``'s alone, and ``partial_fit`` runs ``"sgd"`` only.
    solver_options : dict, optional
        Further options of the solver, e.g. ``{"staleness": 2, "push_every": 4}`` for
        ``"async"`` or ``{"topology": "random"}`` for ``"gossip"``.
    missing : {"error", "mean"}, default="error"
        Missing values in ``X``: ``"error"`` refuses them; ``"mean"`` fills each numeric
        column's with its mean at fit (one pass over Dask data, kept in ``column_means_``
        or the table encoding for prediction) and gives a table's categorical columns a
        level of their own, ``"(missing)"``.
    cache : {"auto", "memory", "none"}, default="auto"
        For Dask input, keep the partitions in worker memory or read them from their
        source in every round (``"auto"``: keep them when they take at most half of the
        free worker memory, else keep the leading partitions that fit there and stream
        the others).  ``partial_fit`` always streams its chunks.
    verbose : int, default=0
        ``1`` or more shows a progress bar (one update per epoch) and logs every epoch on
        the ``daskglm`` logger at INFO level.
    warm_start : bool, default=False
        Start ``fit`` from the coefficients of the previous fit instead of zero.

    Attributes
    ----------
    coef_ : ndarray
    intercept_ : ndarray of shape (1,)
    n_iter_ : int
        Epochs run (``partial_fit`` adds one per call).
    t_ : int
        Steps taken (``solver="sgd"`` only).
    converged_ : bool
        Whether the early-stopping rule ended ``fit`` (always True with ``tol=None`` and
        after ``partial_fit``).
    history_ : list of dict
        One entry per epoch (per chunk with ``partial_fit``): ``objective`` (the epoch's
        objective of ``tol``), its parts ``loss`` and ``penalty``, ``step`` (learning rate),
        ``steps``, ``seconds``, ``rounds``.
    cache_ : {"memory", "none"}
        Whether the fit kept the data in memory or streamed them from their source.
    comm_ : CommReport
        Every engine round (accumulated over ``partial_fit`` calls).
    solver_options_ : dict
        Every option of the solver as the last ``fit`` ran it, with the values chosen
        during the fit in place of ``"auto"`` (the reasons are in ``comm_.choices``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""
