"""Hogwild: lock-free SGD in several threads over the rows of one partition.

This module holds a compiled kernel that runs plain stochastic gradient steps over a
given list of rows of a CSR (or dense) matrix, updating a coefficient vector in place,
and :func:`hogwild_epochs`, which runs that kernel in several Python threads at once, all
on the SAME coefficient vector.  Nothing here imports Dask: it is the computation one
partition does, wherever it lives.

Why it works (Niu, Recht, Ré and Wright, "Hogwild!: A Lock-Free Approach to
Parallelizing Stochastic Gradient Descent", NeurIPS 2011): a step on a sparse row reads
and writes only the coefficients of the columns that row stores.  When rows have few
non-zeros, two threads rarely touch the same coefficient at the same moment, so letting
them write without any lock costs almost nothing: the rare collision loses or delays one
update, and the paper proves SGD still converges when the rows are sparse and measures
speed-ups close to the number of threads.  Locks (or atomics) on every write would cost
far more than the collisions they prevent.  The kernel is compiled with numba with the
GIL released, so the threads really run in parallel.  A float64 store is not torn on the
platforms numba targets, so a race can only lose an update, never corrupt a number.  The
intercept is the one coefficient every row touches; collisions there are common but cost
only lost increments of one scalar.

Objective (scikit-learn's SGD estimators, L2 penalty)::

    f(w, b) = (1 / n) * sum_i s_i * L(x_i . w + b, y_i) + alpha / 2 * ||w||^2

where ``n`` is the number of rows (not the sum of the weights), ``s_i`` the sample
weights, and ``L`` is the log-loss ``log(1 + exp(p)) - y p`` for ``y`` in {0, 1}
(``"log_loss"``, the binomial deviance over two) or ``(p - y)^2 / 2`` (``"squared_error"``).
The intercept ``b`` is not penalised.  Multiplying by ``n``, the same minimiser as
scikit-learn's ``LogisticRegression(C=1 / (n alpha))`` and ``Ridge(alpha=n alpha)``.

One step, on row ``i`` at step number ``t`` with learning rate ``eta_t``::

    g   = s_i * dL/dp(x_i . w + b, y_i)
    w_j = (w_j - eta_t g x_ij) / (1 + eta_t alpha n / n_j)   for each column j row i stores
    b   = b - eta_t g                                          (when fitting the intercept)

where ``n_j`` is the number of rows that store column ``j``.  The L2 penalty is thus
applied as a per-step shrink restricted to the touched coordinates (not lazily): as in
Niu et al., column ``j``'s penalty ``alpha / 2 w_j^2`` is split over the ``n_j`` rows that
store it, scaled by ``n / n_j`` so that the step of a uniformly random row has the full
penalty gradient ``alpha w`` as its expectation, and a step costs O(non-zeros of the row),
never O(d).  The shrink is the exact proximal step of the row's share (a division), which
stays stable for rare columns where ``eta_t alpha n / n_j`` is large; the multiplicative
form ``1 - eta_t alpha n / n_j`` would change sign there.  A lazy penalty would need a
clock of when each coordinate was last shrunk, shared and agreed on by all the threads;
the split penalty needs no state beside the coefficients.  A column that no row stores
has no loss gradient: it gets plain SGD's shrink ``1 / (1 + eta_t alpha)`` at every step,
applied in closed form at the end of each epoch.  For a dense ``X`` every row stores every
column (``n_j = n``) and the step is plain SGD, scikit-learn's ``w *= 1 - eta alpha`` in
its implicit (proximal) form.

Learning rates depend on a step number ``t`` counted from ``step_offset`` (the number of
steps taken before, so that successive calls continue one schedule):
``"constant"``: ``eta0``; ``"invscaling"``: ``eta0 / (t + 1) ** power_t``;
``"optimal"``: ``1 / (alpha (t0 + t))`` with ``t0 = alpha ** -0.75`` (scikit-learn's
schedules, with ``t`` counted from 0).  Within an epoch the rows of thread ``k``
(of ``threads``) get the step numbers ``k, k + threads, k + 2 threads, ...`` after the
epoch's first: the numbering of the threads taking turns, so that steps taken at the same
time get about the same rate.  With one thread it is the position in the epoch's order.
"""

from __future__ import annotations

import math
import numbers
import threading

import numpy as np
import scipy.sparse as sp

__all__ = ["LOSSES", "SCHEDULES", "hogwild_epochs", "hogwild_loss", "sgd_rows"]

#: The loss names :func:`hogwild_epochs` understands (scikit-learn's names).
LOSSES = ("log_loss", "squared_error")


def hogwild_loss(family):
    """The :func:`hogwild_epochs` loss of ``family``, or None (also for a loss that has no
    compiled form, such as the hinge)."""
    compiled_loss = getattr(family, "compiled_loss", None)
    compiled = compiled_loss() if compiled_loss is not None else None
    return _HOGWILD_LOSSES.get(compiled[0]) if compiled is not None else None


#: The :func:`hogwild_epochs` loss of each compiled loss (:meth:`Family.compiled_loss`) it has.
_HOGWILD_LOSSES = {"binomial": "log_loss", "gaussian": "squared_error"}

#: The learning-rate schedule names :func:`hogwild_epochs` understands.
SCHEDULES = ("constant", "invscaling", "optimal")

_COMPILED = None


def _compiled():
    """The compiled kernel: numba imported, and the kernel compiled, on first use.

    The kernel takes the loss and the schedule as integer codes: their index in
    :data:`LOSSES` and :data:`SCHEDULES`.
    """
    global _COMPILED
    if _COMPILED is None:
        import numba

        @numba.njit(cache=True, nogil=True)
        def sgd_rows_kernel(data, indices, indptr, y, sample_weight, row_order, coef,
                            intercept_cell, penalty_per_column, loss_code, schedule_code, eta0,
                            power_t, alpha, optimal_t0, first_step, step_stride, fit_intercept,
                            implicit_columns):
            step = first_step
            for position in range(row_order.shape[0]):
                row = row_order[position]
                start, stop = indptr[row], indptr[row + 1]
                dot = intercept_cell[0]
                for entry in range(start, stop):
                    column = entry - start if implicit_columns else indices[entry]
                    dot += data[entry] * coef[column]
                if loss_code == 0:  # log-loss: sigmoid(p) - y, without overflow
                    if dot >= 0.0:
                        derivative = 1.0 / (1.0 + math.exp(-dot)) - y[row]
                    else:
                        odds = math.exp(dot)
                        derivative = odds / (1.0 + odds) - y[row]
                else:  # squared error
                    derivative = dot - y[row]
                if schedule_code == 0:  # constant
                    rate = eta0
                elif schedule_code == 1:  # invscaling
                    rate = eta0 / (step + 1.0) ** power_t
                else:  # optimal
                    rate = 1.0 / (alpha * (optimal_t0 + step))
                scaled_gradient = rate * sample_weight[row] * derivative
                for entry in range(start, stop):
                    column = entry - start if implicit_columns else indices[entry]
                    coef[column] = (coef[column] - scaled_gradient * data[entry]) / (
                        1.0 + rate * penalty_per_column[column]
                    )
                if fit_intercept:
                    intercept_cell[0] -= scaled_gradient
                step += step_stride

        _COMPILED = sgd_rows_kernel
    return _COMPILED


def sgd_rows(data, indices, indptr, y, sample_weight, row_order, coef, intercept_cell,
             penalty_per_column, *, loss="log_loss", schedule="constant", eta0=0.01,
             power_t=0.25, alpha=0.0, first_step=0, step_stride=1, fit_intercept=True,
             implicit_columns=False):
    """Run SGD steps over the rows ``row_order`` of a CSR matrix, in that order, in place.

    This is the compiled kernel that :func:`hogwild_epochs` runs in each thread, with the
    GIL released; the step is the one of the module docstring.  It checks nothing: the
    arrays must have the types and shapes below.

    Parameters
    ----------
    data, indices, indptr : ndarray
        The CSR arrays of ``X``: float64 values, integer column indices with no duplicates
        within a row, row pointers.  With ``implicit_columns`` the column of an entry is its
        offset in its row and ``indices`` is not read: a dense C-contiguous ``X`` of shape
        (n, d) is ``data=X.reshape(-1)``, ``indptr=d * arange(n + 1)``.
    y : ndarray of shape (n,), float64
        Targets, in {0, 1} for ``"log_loss"``.
    sample_weight : ndarray of shape (n,), float64
        Row weights, multiplying each row's loss gradient.
    row_order : ndarray of int
        The rows to visit, in order.
    coef : ndarray of shape (d,), float64
        Coefficients, updated in place (the vector the threads share).
    intercept_cell : ndarray of shape (1,), float64
        The intercept, updated in place when ``fit_intercept``.
    penalty_per_column : ndarray of shape (d,), float64
        The L2 strength a step applies to each column it touches: ``alpha * n / n_j``
        (see the module docstring).
    loss : {"log_loss", "squared_error"}
    schedule : {"constant", "invscaling", "optimal"}
    eta0, power_t, alpha : float
        The schedule's parameters (``alpha`` > 0 is only read by ``"optimal"``).
    first_step, step_stride : int
        The step number of the first row of ``row_order``, and the increment per row.
    fit_intercept : bool
    implicit_columns : bool
        Whether the rows are dense (see ``indices``).
    """
    alpha = float(alpha)
    optimal_t0 = alpha**-0.75 if schedule == "optimal" else 0.0
    _compiled()(
        data, indices, indptr, y, sample_weight, row_order, coef, intercept_cell,
        penalty_per_column, LOSSES.index(loss), SCHEDULES.index(schedule), float(eta0),
        float(power_t), alpha, optimal_t0, int(first_step), int(step_stride),
        bool(fit_intercept), bool(implicit_columns),
    )


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _rows_of(X):
    """``((data, indices, indptr), implicit_columns, shape)``: ``X`` as :func:`sgd_rows` reads it.

    A CSR matrix in canonical form (sorted indices, no duplicates) with float64 values is
    used as it is; other sparse input is converted into a new matrix, the caller's
    untouched.  A dense array becomes rows with implicit columns (a view when it is
    C-contiguous float64, else a converted copy).
    """
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got a sparse array of shape {X.shape}.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must hold real numbers; got dtype {X.dtype}.")
        csr = X.tocsr()  # the same object for a CSR input, a new one otherwise
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()  # sorts the indices too, in the copy
        data = np.asarray(csr.data, dtype=np.float64)
        if not np.isfinite(data).all():
            raise ValueError("X holds NaN or infinite values.")
        return (data, csr.indices, csr.indptr), False, csr.shape
    if not isinstance(X, np.ndarray):
        raise ValueError(
            f"X must be a scipy.sparse matrix or a 2-D numpy array; got {type(X).__name__}."
        )
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D; got an array of shape {X.shape}.")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"X must hold real numbers; got dtype {X.dtype}.")
    dense = np.ascontiguousarray(X, dtype=np.float64)
    if not np.isfinite(dense).all():
        raise ValueError("X holds NaN or infinite values.")
    n_rows, n_columns = dense.shape
    row_starts = n_columns * np.arange(n_rows + 1, dtype=np.int64)
    return (dense.reshape(-1), row_starts[:0], row_starts), True, dense.shape


def _vector(values, name, length):
    """``values`` as a float64 vector of ``length`` finite numbers (not necessarily a copy)."""
    try:
        vector = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of real numbers: {error}") from None
    if vector.shape != (length,):
        raise ValueError(f"{name} must have shape ({length},); got {vector.shape}.")
    if not np.isfinite(vector).all():
        raise ValueError(f"{name} holds NaN or infinite values.")
    return vector


def _epoch_shrink(schedule, eta0, power_t, alpha, first_step, n_steps):
    """``prod_t 1 / (1 + eta_t alpha)`` over ``n_steps`` steps from ``first_step``."""
    if schedule == "constant":
        return math.exp(-n_steps * math.log1p(eta0 * alpha))
    steps = first_step + np.arange(n_steps, dtype=np.float64)
    if schedule == "invscaling":
        rates = eta0 / (steps + 1.0) ** power_t
    else:
        rates = 1.0 / (alpha * (alpha**-0.75 + steps))
    return math.exp(-np.log1p(rates * alpha).sum())


def hogwild_epochs(X, y, sample_weight=None, coef=None, intercept=0.0, *, loss="log_loss",
                   alpha=1e-4, eta0=0.01, schedule="optimal", power_t=0.25, epochs=1,
                   threads=1, seed=None, fit_intercept=True, step_offset=0):
    """Run ``epochs`` epochs of Hogwild SGD over the rows of ``X`` in ``threads`` threads.

    Each epoch draws a new random order of the rows, splits it into ``threads`` contiguous
    slices, and runs one thread per slice; all of them update the same coefficient vector
    in place, without locks.  The threads are joined at the end of every epoch.  The steps,
    the penalty and the step numbering are described in the module docstring.

    Parameters
    ----------
    X : scipy.sparse matrix or array of shape (n, d), or ndarray of shape (n, d)
        Features.  CSR with sorted indices and no duplicates is used as it is; other
        sparse formats and non-canonical CSR are converted into a copy.  A dense array
        goes through the same kernel, as rows that store every column (read in place when
        C-contiguous float64): correct, but the threads then collide on every coefficient,
        without Hogwild's benefit.
    y : array-like of shape (n,)
        Targets: 0 or 1 for ``"log_loss"``, real for ``"squared_error"``.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights (all ones when None).
    coef : array-like of shape (d,), optional
        Initial coefficients (zeros when None).  Copied: the caller's array is not changed.
    intercept : float, default=0.0
        Initial intercept; it stays at this value when ``fit_intercept`` is False.
    loss : {"log_loss", "squared_error"}, default="log_loss"
    alpha : float, default=1e-4
        L2 penalty strength, >= 0; > 0 for ``schedule="optimal"``.
    eta0 : float, default=0.01
        Initial learning rate, > 0 (not used by ``"optimal"``).
    schedule : {"constant", "invscaling", "optimal"}, default="optimal"
        Learning-rate schedule, see the module docstring.
    power_t : float, default=0.25
        Exponent of ``"invscaling"``.
    epochs : int, default=1
        Number of passes over the rows, >= 1.
    threads : int, default=1
        Number of threads, >= 1.  With one thread the run is deterministic given ``seed``
        and runs in the calling thread.
    seed : int, numpy.random.Generator or None, default=None
        Seed of ``numpy.random.default_rng``; epoch ``e`` visits the rows in the order of
        that generator's ``e``-th ``permutation(n)``.  None draws fresh entropy.
    fit_intercept : bool, default=True
        Whether to update the (unpenalised) intercept.
    step_offset : int, default=0
        Step number of the first step, >= 0: pass the ``n_updates`` of earlier calls to
        continue their learning-rate schedule.

    Returns
    -------
    coef : ndarray of shape (d,)
        The new coefficients (a new array).
    intercept : float
    n_updates : int
        The number of SGD steps taken, ``epochs * n``.

    Raises
    ------
    ValueError
        For a bad option, or arrays of the wrong shape or with non-finite values.
    """
    if not _is_int(threads) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1; got {threads!r}.")
    if not _is_int(epochs) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1; got {epochs!r}.")
    if not _is_int(step_offset) or step_offset < 0:
        raise ValueError(f"step_offset must be an integer >= 0; got {step_offset!r}.")
    if loss not in LOSSES:
        raise ValueError(f"Unknown loss {loss!r}; choose one of {list(LOSSES)}.")
    if schedule not in SCHEDULES:
        raise ValueError(f"Unknown schedule {schedule!r}; choose one of {list(SCHEDULES)}.")
    if not (_is_real(alpha) and math.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"alpha must be a finite number >= 0; got {alpha!r}.")
    if schedule == "optimal":
        if not alpha > 0:
            raise ValueError(f"schedule='optimal' needs alpha > 0; got {alpha!r}.")
    elif not (_is_real(eta0) and math.isfinite(eta0) and eta0 > 0):
        raise ValueError(f"eta0 must be a finite number > 0; got {eta0!r}.")
    if schedule == "invscaling" and not (_is_real(power_t) and math.isfinite(power_t)):
        raise ValueError(f"power_t must be a finite number; got {power_t!r}.")
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise ValueError(f"fit_intercept must be True or False; got {fit_intercept!r}.")
    if not (_is_real(intercept) and math.isfinite(intercept)):
        raise ValueError(f"intercept must be a finite number; got {intercept!r}.")

    rows, implicit_columns, (n_rows, n_columns) = _rows_of(X)
    if n_rows == 0:
        raise ValueError("X has no rows.")
    y = _vector(y, "y", n_rows)
    if loss == "log_loss" and not np.isin(y, (0.0, 1.0)).all():
        raise ValueError("loss='log_loss' needs y in {0, 1}.")
    if sample_weight is None:
        sample_weight = np.ones(n_rows)
    else:
        sample_weight = _vector(sample_weight, "sample_weight", n_rows)
        if (sample_weight < 0).any():
            raise ValueError("sample_weight must be >= 0.")
    coef = np.zeros(n_columns) if coef is None else _vector(coef, "coef", n_columns).copy()

    alpha, eta0, power_t = float(alpha), float(eta0), float(power_t)
    options = dict(loss=loss, schedule=schedule, eta0=eta0, power_t=power_t, alpha=alpha,
                   fit_intercept=bool(fit_intercept))
    intercept_cell = np.array([float(intercept)])
    if implicit_columns:  # dense: every row stores every column
        untouched = np.zeros(n_columns, dtype=bool)
        penalty_per_column = np.full(n_columns, alpha)
    else:
        rows_per_column = np.bincount(rows[1], minlength=n_columns)
        untouched = rows_per_column == 0
        penalty_per_column = np.zeros(n_columns)
        penalty_per_column[~untouched] = alpha * n_rows / rows_per_column[~untouched]

    def run_slice(row_order, first_step):
        sgd_rows(*rows, y, sample_weight, row_order, coef, intercept_cell, penalty_per_column,
                 first_step=first_step, step_stride=threads, implicit_columns=implicit_columns,
                 **options)

    shrink_untouched = alpha > 0 and untouched.any()
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        epoch_first_step = step_offset + epoch * n_rows
        order = rng.permutation(n_rows)
        if threads == 1:
            run_slice(order, epoch_first_step)
        else:
            _run_threads(run_slice, np.array_split(order, threads), epoch_first_step)
        if shrink_untouched:
            coef[untouched] *= _epoch_shrink(schedule, eta0, power_t, alpha, epoch_first_step,
                                             n_rows)
    return coef, float(intercept_cell[0]), epochs * n_rows


def _run_threads(run_slice, slices, first_step):
    """Run ``run_slice(slices[k], first_step + k)`` in one thread per non-empty slice."""
    errors = []

    def work(row_order, thread_first_step):
        try:
            run_slice(row_order, thread_first_step)
        except BaseException as error:  # re-raised in the calling thread
            errors.append(error)

    workers = [
        threading.Thread(target=work, args=(row_order, first_step + index), daemon=True)
        for index, row_order in enumerate(slices)
        if row_order.size
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]
