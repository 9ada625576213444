"""The docstring pieces the estimators share: their common parameters (``COMMON_DOC``),
``positive`` (``POSITIVE_DOC``) and the fitted attributes (``FITTED_DOC``)."""

#: The parameters every estimator of :class:`~.base._GLMBase` takes, in the numpydoc form
#: of a class docstring's ``Parameters`` section.
COMMON_DOC = """
    solver : {"auto", "normal", "gd", "lbfgs", "newton", "proximal", "admm", "averaging", \
"sgd", "async", "gossip"}, default="auto"
        Optimisation method.  ``"auto"`` runs the method of least predicted time among
        those that handle the problem (:func:`~daskglm.accounting.choice.choose_method`,
        from ``n``, ``d``, family, penalty, ``tol`` and the cluster's network, measured
        once per client; ``solver_choice_`` records the figures): the normal equations for the
        Gaussian family with no or an L2 penalty, Newton's method for an L2-penalised
        model with an exact Hessian (canonical link, or the log link of the Gamma,
        negative binomial and Tweedie with power in [1, 2]) and few features, L-BFGS
        for other smooth problems (on column shards, ``{"sharded": True}``, from 2^18
        features on) and proximal gradient for L1 and elastic-net penalties; after the
        validation round it chooses again where the columns' scales or the seconds of a
        pass over streamed data change the prices, and its L-BFGS hands over to
        Newton's method mid-fit when its progress predicts more rounds than Newton's
        finish (``comm_.choices`` gives the figures); ``solver_`` names the pick.
        ``"async"`` (parameter-server SGD) and ``"gossip"``
        (decentralised SGD) count ``max_iter`` in epochs and stop by SGD's rule on a
        sampled objective; for ``"sgd"``, ``"async"`` and ``"gossip"`` one exact
        gradient round then judges that stop, and ``converged_`` is True only when it
        meets ``tol`` (a stop at the noise floor gives a ConvergenceWarning).  A solver that cannot handle the problem raises a ValueError
        naming the solvers that can.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept.
    tol : float, default=1e-4
        Stop when the largest entry of the gradient of the objective (mean loss +
        penalty) is at most ``tol`` (its distance to the subdifferential for L1 and
        elastic-net penalties; the local solves' gradients for ``"averaging"``), each
        entry of a column whose root mean square is below 1 first divided by it: a rare
        column's gradient is small however far its coefficient is from the optimum.
        Never looser than scikit-learn's test; ``"admm"`` meets it at its consensus
        point, compressed and deadline gradient descent with one exact round.
    max_iter : int, default=100
        Most iterations of the solver.
    solver_options : dict or SolverOptions, optional
        Method-specific options, e.g. ``{"memory": 20}`` for ``"lbfgs"``.
    missing : {"error", "mean"}, default="error"
        Missing values in ``X``: ``"error"`` refuses them; ``"mean"`` fills each numeric
        column's with its mean at fit (one pass over Dask data, kept in ``column_means_``,
        the table encoding or the formula's design for prediction) and gives a table's
        (or a formula's) categorical columns a level of their own, ``"(missing)"``.
    cache : {"auto", "memory", "none"}, default="auto"
        For Dask input: ``"memory"`` reads the data once and keeps the partitions on the
        workers; ``"none"`` reads them from their source (e.g. zarr) in every round, with
        memory bounded by about one partition per worker thread; ``"auto"`` keeps them
        when they take at most half of the free worker memory, and otherwise keeps the
        leading partitions that fit in that half and streams the others (``cache_`` is
        then ``"partial"``).  The choice and its reason are logged; bytes read from
        storage are in ``comm_.bytes_read``.  With Dask's config key
        ``daskglm.kept-copies`` set to ``"float32"``, data that do not all fit keep
        float32 copies of a dense float64 ``X`` instead, up to twice as many rows in
        memory (``comm_.choices["kept copies"]``); the fit is then that of ``X`` rounded
        to float32 on those rows.
    verbose : int, default=0
        ``1`` or more shows a progress bar (objective and gradient per iteration) and logs
        every iteration on the ``daskglm`` logger at INFO level.
    warm_start : bool, default=False
        Start ``fit`` from the coefficients of the previous fit instead of zero.
"""

#: The ``positive`` parameter of the estimators that constrain the coefficients' signs.
POSITIVE_DOC = """    positive : bool, default=False
        Constrain the coefficients (not the intercept) to be non-negative, as
        scikit-learn's ``positive=True``.  Solved by the normal equations (non-negative
        least squares on the Gram matrix, still one round), ``"lbfgs"`` (L-BFGS-B with
        bounds), ``"proximal"`` and ``"admm"`` (the proximal step clips at zero);
        ``solver="auto"`` picks the normal equations for least squares and L-BFGS
        otherwise, and the other solvers raise a ValueError.
"""


#: The ``Attributes`` section of a fitted estimator's docstring.
FITTED_DOC = """
    Attributes
    ----------
    coef_ : ndarray
        Coefficients, shaped as in scikit-learn.
    intercept_ : float or ndarray
        Intercept (0.0 when ``fit_intercept=False``).
    n_iter_ : int
        Iterations run by the solver.
    converged_ : bool
        Whether the solver met its tolerance (a ConvergenceWarning is raised otherwise).
    history_ : list of dict
        One entry per iteration: ``objective``, ``grad_norm``, ``step``, ``seconds``,
        ``rounds``.
    cache_ : {"memory", "none"}
        Whether the fit kept the data in memory or streamed them from their source.
    comm_ : CommReport
        Every engine round of the fit: kind, tasks, bytes (modelled and measured),
        seconds, time spent waiting for the slowest partition (see :mod:`daskglm.accounting.ledger`).
    solver_ : str
        The solver that ran (the one ``solver="auto"`` chose).
    solver_choice_ : dict
        Only with ``solver="auto"``: the ``solver`` chosen, the network figures the
        choice priced messages on (``link``: latency, bandwidth, worker processes and
        where the figures come from; set ``daskglm.link`` in the Dask configuration to
        fix them), every candidate's ``predicted_seconds`` and ``predicted_rounds``, and
        the fit's ``measured_seconds``.
    solver_options_ : dict
        Every option of that solver as it ran: ``solver_options`` over the defaults, with
        the values chosen during the fit in place of ``"auto"`` (the reasons are in
        ``comm_.choices``).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""
