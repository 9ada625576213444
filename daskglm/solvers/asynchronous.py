"""Parameter-server SGD (``solver="async"``): Downpour, stale-synchronous or synchronous.

The driver starts, watches and stops; the work runs in long-lived tasks on the workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..accounting.kinds import Kind
from ..compute.hogwild import SCHEDULES as HOGWILD_SCHEDULES
from ..compute.hogwild import hogwild_loss
from ..compute.parameter_server import ParameterServerConfig, parameter_server_task
from ..compute.seeds import root_seed
from ..engine.parameter_holders import HolderLostError
from ..engine.parameter_server import ParameterServer
from ..engine.tasks import pause_if_slowed
from ..model.problem import Feature
from ..optim.schedules import LEARNING_RATES, make_step_rule
from ..progress import report_part
from .base import EarlyStopping, History, Solver, SolverResult
from .round_sizing import COMPUTE_TO_FIXED

__all__ = ["AsyncSGD"]

#: Generations in a row that may process no row before the fit gives up.
MAX_IDLE_GENERATIONS = 3


@dataclass
class _Counts:
    """What runs on over the epochs of a fit: the generation (it names the tasks' random
    streams) and the steps between the last two pushes of each task that pushed twice."""

    generation: int = 0
    push_sizes: list = field(default_factory=list)


def _is_int(value, minimum):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= minimum


def _is_number(value, minimum):
    return (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and math.isfinite(value) and value > minimum)


class AsyncSGD(Solver):
    """Parameter-server SGD: each partition's task runs mini-batch SGD on its own rows
    against parameters held on the cluster.

    The parameters live in a holder on one worker (:meth:`Engine.parameter_holder`, a
    Dask Actor).  Each partition's task (:func:`~daskglm.compute.parameter_server.
    parameter_server_task`) reads them, takes steps on mini-batches of its own rows,
    pushes its accumulated change every ``push_every`` steps and reads again every
    ``fetch_every`` steps (Downpour SGD), without the driver.  With ``staleness=s`` a task
    that has pushed more than ``s`` updates beyond the slowest running task waits (and
    then reads) before its next update: ``s=0`` is synchronous (every task steps from
    the parameters all tasks have updated), ``s=k`` stale-synchronous, ``None`` fully
    asynchronous.  The clock lag of every push is counted in a histogram
    (``comm_.clock_staleness``; never above ``s``), with the version staleness of the
    holder (``comm_.staleness``: updates applied between a task's read and its push) and
    the seconds waited at the bound (``comm_.seconds_blocked``).

    The driver runs generations: one :meth:`Engine.map_as_completed` round whose tasks
    work until the epoch's rows are read (``n_samples`` rows over all tasks: fast workers
    read more), for at most ``seconds`` each.  Where a worker thread holds several
    partitions, their tasks run one after the other: each then reads at most one pass
    over its rows per generation, so that every partition gets its turn (and a fast
    worker's advance is bounded by a generation).  A worker lost mid-generation loses only
    the updates it had not pushed; the holder retires its clock so the others do not wait
    for it, and the next generation works on its partitions again (rebuilt by the
    engine).  A holder lost with its worker raises
    :class:`~daskglm.engine.parameter_holders.HolderLostError`.

    The stopping rule is SGD's (``n_iter_no_change`` epochs whose sampled objective, the
    mean loss of the epoch's rows at the parameters each task read plus the penalty, does
    not improve by ``tol``); ``history`` has one entry per epoch with that objective, the
    ``version`` (updates applied) and ``generations``.  Updates race by design: a run is
    not reproducible bit for bit, even with ``random_state``.

    Options
    -------
    batch_size : int, default 32
        Rows per local step of one task.
    learning_rate : {"constant", "invscaling", "optimal", "adagrad"}, default "invscaling"
        Step rule (:func:`daskglm.optim.schedules.make_step_rule`); the step number is
        estimated from the holder's version.  Each task keeps its own Adagrad sums.
    eta0, power_t : float, default 0.1, 0.25
    push_every, fetch_every : int or "auto", default "auto"
        Local steps between two pushes, and between two reads.  ``push_every="auto"``:
        each task sizes it from its own timings, the smallest power of two of steps whose
        compute is at least 10 times the fixed seconds of its last push (a message to the
        holder, and the Python around its compiled steps), at most one pass over its
        rows, so that the holder's round trips do not dominate; ``fetch_every="auto"``
        reads after every push.  The steps between the last two pushes (the median over
        the tasks) are in the ledger's ``choices``.
    staleness : int or None, default None
        The bound on the clock lag (None: fully asynchronous).
    n_iter_no_change : int, default 5
    random_state : None or int, default None
    seconds : float, default 2.0
        Most seconds one task works in one generation.
    hogwild : int or None, default None
        Threads of lock-free Hogwild SGD inside each task between two pushes (binomial
        or Gaussian family with the canonical link, no or L2 penalty, a gradient-free
        learning rate); best on sparse rows.
    """

    name = "async"
    stops_on_optimality = False
    handles = frozenset({Feature.NON_QUADRATIC_LOSS})
    options = {
        "batch_size": 32, "learning_rate": "invscaling", "eta0": 0.1, "power_t": 0.25,
        "push_every": "auto", "fetch_every": "auto", "staleness": None, "n_iter_no_change": 5,
        "random_state": None, "seconds": 2.0, "hogwild": None,
    }

    accepts_no_tol = True

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        opts = self.opts
        checks = {
            "batch_size": (_is_int(opts["batch_size"], 1), "an integer >= 1"),
            "learning_rate": (opts["learning_rate"] in LEARNING_RATES,
                              f"one of {list(LEARNING_RATES)}"),
            "push_every": (opts["push_every"] == "auto" or _is_int(opts["push_every"], 1),
                           "'auto' or an integer >= 1"),
            "fetch_every": (opts["fetch_every"] == "auto" or _is_int(opts["fetch_every"], 1),
                            "'auto' or an integer >= 1"),
            "staleness": (opts["staleness"] is None or _is_int(opts["staleness"], 0),
                          "None or an integer >= 0"),
            "n_iter_no_change": (_is_int(opts["n_iter_no_change"], 1), "an integer >= 1"),
            "seconds": (_is_number(opts["seconds"], 0), "a number > 0"),
            "hogwild": (opts["hogwild"] is None or _is_int(opts["hogwild"], 1),
                        "None or an integer >= 1"),
        }
        for key, (valid, requirement) in checks.items():
            if not valid:
                raise ValueError(f"Option {key!r} of solver {self.name!r} must be "
                                 f"{requirement}; got {opts[key]!r}.")
        if opts["learning_rate"] != "optimal":
            make_step_rule(opts["learning_rate"], opts["eta0"], opts["power_t"])  # checks them
        if opts["hogwild"] is not None and opts["learning_rate"] not in HOGWILD_SCHEDULES:
            raise ValueError(f"Option 'hogwild' needs a learning_rate in "
                             f"{list(HOGWILD_SCHEDULES)}; got {opts['learning_rate']!r}.")
        root_seed(opts["random_state"])  # checks it

    def _check_hogwild(self, problem):
        if self.opts["hogwild"] is None:
            return
        if hogwild_loss(problem.family) is None:
            raise ValueError("Option 'hogwild' needs the binomial or Gaussian family with "
                             f"its canonical link; got {problem.family!r}.")
        if problem.penalty.ridge_strength is None:
            raise ValueError("Option 'hogwild' needs no penalty or an L2 penalty; got "
                             f"{problem.penalty!r}.")

    def config(self, problem, engine):
        """The :class:`ParameterServerConfig` of a fit on ``engine``."""
        opts = self.opts
        rule = make_step_rule(opts["learning_rate"], opts["eta0"], opts["power_t"],
                              alpha=getattr(problem.penalty, "alpha", 0.0))
        return ParameterServerConfig(
            family=problem.family, penalty=problem.penalty, rule=rule,
            fit_intercept=problem.fit_intercept, n_features=problem.n_features,
            batch_size=int(opts["batch_size"]), seed=root_seed(opts["random_state"]),
            push_every=None if opts["push_every"] == "auto" else int(opts["push_every"]),
            fetch_every=None if opts["fetch_every"] == "auto" else int(opts["fetch_every"]),
            amortise=COMPUTE_TO_FIXED,
            bounded=opts["staleness"] is not None, seconds=float(opts["seconds"]),
            hogwild=opts["hogwild"], passes=None if self._own_threads(engine) else 1.0,
            pace=pause_if_slowed,
        )

    @staticmethod
    def _own_threads(engine):
        """Whether every partition's task can run at once (a worker thread each)."""
        threads = getattr(engine, "n_threads", None) or len(engine.groups)
        return threads >= engine.n_partitions

    def solve(self, problem, engine, params0):
        self._check_hogwild(problem)
        config = self.config(problem, engine)
        server = ParameterServer(engine, np.asarray(params0, dtype=float))
        try:
            result = self._run(problem, engine, server, config)
        finally:
            server.close()
        if server.rebuilds:
            result.message += (f" (the parameter holder was rebuilt {len(server.rebuilds)} "
                               f"time(s) after losing its worker)")
        return result

    def _run(self, problem, engine, server, config):
        history = History(engine)
        stopping = EarlyStopping(self.tol, self.opts["n_iter_no_change"])
        converged = False
        n_epochs = 0
        counts = _Counts()
        for n_epochs in range(1, self.max_iter + 1):
            while True:
                try:
                    progress, generations = self._epoch(engine, server, config, counts)
                    break
                except HolderLostError as exc:
                    # the epoch starts again, from the last checkpoint when the holder is
                    # gone (a task's call may fail while the holder answers the driver)
                    if server.alive():
                        raise
                    server.rebuild(exc)
            version, params = server.version, server.params
            weight = progress["weight"]
            loss = progress["loss"] / weight if weight > 0 else math.nan
            penalty = progress["penalty"] / weight if weight > 0 else math.nan
            value = loss + penalty
            history.record(value, math.nan, self._rate(config, version, engine), loss=loss,
                           penalty=penalty, version=version, generations=generations)
            if not np.all(np.isfinite(params)):
                return SolverResult(params, n_epochs, False, history.entries,
                                    "the iterates diverged; lower the learning rate")
            if stopping.should_stop(value):
                converged = True
                break
        push_sizes = counts.push_sizes
        if config.push_every is None and push_sizes:
            engine.ledger.note_choice(
                "push_every", int(np.median(push_sizes)),
                f"the median over the tasks of the steps between their last two pushes, each "
                f"sized so that its steps' compute is at least {COMPUTE_TO_FIXED:g}x the "
                f"seconds of its push to the holder (from {min(push_sizes)} to "
                f"{max(push_sizes)})")
        if self.tol is None:
            converged, message = True, "ran every epoch (no tolerance)"
        else:
            message = "converged" if converged else "maximum number of epochs reached"
        return SolverResult(server.params, n_epochs, converged, history.entries, message)

    def _epoch(self, engine, server, config, counts):
        """Generations until the epoch's rows are read; ``(progress, generations)``, the
        server's checkpoint taken after each generation."""
        holder = server.holder
        holder.start_run(engine.n_samples, self.opts["staleness"])
        generations, idle, rows = 0, 0, 0
        while rows < engine.n_samples:
            with engine.map_as_completed(parameter_server_task, holder, config,
                                         counts.generation, kind=Kind.ASYNC_SGD) as tasks:
                for _, report in tasks:
                    if report.pushes >= 2:
                        counts.push_sizes.append(report.push_every)
            counts.generation += 1
            generations += 1
            progress = server.checkpoint()
            idle = idle + 1 if progress["rows"] == rows else 0
            rows = progress["rows"]
            report_part(rows / engine.n_samples)
            if idle >= MAX_IDLE_GENERATIONS:
                raise RuntimeError(f"{idle} generations of parameter-server SGD in a row "
                                   f"read no rows (every task failed or found no rows).")
        return progress, generations

    @staticmethod
    def _rate(config, version, engine):
        """The learning rate at the holder's ``version`` (NaN for per-parameter rates)."""
        step = version * (config.push_every or 1) // max(engine.n_partitions, 1)
        try:
            rate, _ = config.rule.update(None, config.rule.init(np.zeros(1)), step)
        except TypeError:  # a rule that needs the gradient
            return math.nan
        return float(np.mean(rate))
