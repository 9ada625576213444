"""``solver="auto"``: the solver it picks, and what a fit records of the pick.

The pick is :func:`~daskglm.accounting.choice.choose_method`'s among the solvers of
:data:`AUTO_CHOICES` that handle the problem, priced on the cluster's network
(:func:`cluster_link`: measured once per client, or fixed by ``daskglm.link``).  After the
fit, :func:`auto_choice` is what ``solver_choice_`` holds and :func:`choice_reason` the
sentence the ledger prints under its table.
"""

from __future__ import annotations

import os

import numpy as np

from ..accounting.choice import choose_method, criterion_spread, driver_calls, predict_methods
from ..accounting.links import IN_PROCESS
from ..engine.distributed import active_client
from ..engine.link_probe import link_for
from ..solvers import SOLVERS

__all__ = ["AUTO_CHOICES", "choose_solver", "solver_after_validation", "auto_choice",
           "choice_reason", "cluster_link", "worker_threads"]

#: The solvers ``solver="auto"`` chooses among.
AUTO_CHOICES = ("normal", "newton", "lbfgs", "proximal")


def _able(problem):
    """The solvers of :data:`AUTO_CHOICES` that handle ``problem``."""
    return {name for name in AUTO_CHOICES
            if name in SOLVERS and SOLVERS[name].unsupported(problem) is None}


def worker_threads():
    """Worker threads of the active Dask client, or without one the cores the in-process
    engine's threads run on: the ``workers`` of ``solver="auto"``'s cost model."""
    client = active_client()
    if client is None:
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def cluster_link():
    """The network of the active Dask client's cluster (measured once per client, or
    fixed by ``daskglm.link``), :data:`~daskglm.accounting.links.IN_PROCESS` without one."""
    return link_for(active_client())


def choose_solver(problem, n_samples=1, tol=1e-4, workers=1, pass_seconds=0.0,
                  link=IN_PROCESS, spread=1.0, gathered=None):
    """The solver ``solver="auto"`` picks: the one of least predicted time among those
    that handle the problem (:func:`~daskglm.accounting.choice.choose_method`), a
    round reading the data from their source for ``pass_seconds``, its messages
    crossing ``link`` (the driver gathering ``gathered`` partial sums a round), the
    columns' :func:`~daskglm.accounting.choice.criterion_spread` ``spread``."""
    chosen = choose_method(problem, n_samples, _able(problem), tol=tol, workers=workers,
                           pass_seconds=pass_seconds, link=link, spread=spread,
                           gathered=gathered)
    return "lbfgs" if chosen is None else chosen.method


#: From this criterion spread on, ``solver="auto"`` chooses again after the validation
#: round (below it the first-order methods' prices change by under a decade of ``tol``).
SPREAD_TO_CHOOSE_AGAIN = 10.0


def solver_after_validation(problem, engine, tol, link, name):
    """``solver="auto"`` again once the validation round has read the data, where what it
    measured changes the prices: the seconds of a pass over data streamed from their
    source in every round, and the columns' scales (a first-order method must drive its
    gradient :func:`~daskglm.accounting.choice.criterion_spread` times below ``tol``
    where a column is in the thousands), and on a network the partial sums the driver
    gathers a round where the partitions' placement makes them more than one a process.
    The choice and its reason go to the ledger; ``name``, the choice before the read,
    where none applies."""
    reasons, pass_seconds, spread = [], 0.0, 1.0
    validation = _validation_record(engine)
    if engine.streamed_share:
        pass_seconds = validation.seconds * engine.streamed_share
        reasons.append(f"{engine.streamed_share:.0%} of the data are read from their source "
                       f"in every round ({pass_seconds:.3g} s a pass, from the validation "
                       f"round)")
    moments = getattr(engine, "column_moments", None)
    if moments is not None:
        weight = float(moments.weight) or 1.0
        measured = criterion_spread(np.asarray(moments.sums) / weight,
                                    np.asarray(moments.squares) / weight)
        if measured >= SPREAD_TO_CHOOSE_AGAIN:
            spread = measured
            reasons.append(f"the columns' scales ask first-order methods for a gradient "
                           f"{spread:.3g} times below tol")
    gathered = gathered_partials(validation, link)
    if gathered is not None and gathered > driver_calls(link):
        reasons.append(f"the driver gathers {gathered} partial sums a round (one a worker "
                       f"process, {driver_calls(link)}, before the data were placed)")
    if not reasons:
        return name
    chosen = choose_solver(problem, engine.n_samples, tol, worker_threads(),
                           pass_seconds=pass_seconds, link=link, spread=spread,
                           gathered=gathered)
    engine.ledger.note_choice(
        "solver", chosen,
        f"{' and '.join(reasons)}: {chosen!r} is predicted fastest"
        + ("" if chosen == name else f" (before the data were read: {name!r})"))
    return chosen


def _validation_record(engine):
    """The ledger's record of the engine's validation round (None without one)."""
    return next((r for r in engine.ledger.records if r.kind.startswith("validate")), None)


def gathered_partials(validation, link):
    """The partial sums the driver gathered in the ``validation`` round's record, on a
    network (a round of the whole vector gathers as many); None in this process or
    where the record did not count them."""
    if not link.networked or validation is None or not validation.gathered:
        return None
    return int(validation.gathered)


def auto_choice(problem, engine, tol, name, link, seconds):
    """What ``solver_choice_`` records of a ``solver="auto"`` fit: the method, the
    network figures it was priced on, every candidate's seconds and rounds predicted
    with the bytes the data took as read (the choice itself, before any read, priced
    ``8 n p``), and the fit's measured seconds."""
    able = _able(problem)
    costs = [c for c in predict_methods(problem, engine.n_samples, tol=tol,
                                        workers=worker_threads(), link=link,
                                        data_bytes=getattr(engine, "data_bytes", None),
                                        gathered=gathered_partials(_validation_record(engine),
                                                                   link))
             if c.method in able]
    return {"solver": name, "link": link.as_dict(),
            "predicted_seconds": {c.method: c.seconds for c in costs},
            "predicted_rounds": {c.method: c.rounds for c in costs},
            "measured_seconds": float(seconds)}


def choice_reason(choice):
    """One sentence for the ledger: the network ``solver="auto"`` priced on, every
    candidate's predicted seconds, and the fit's measured seconds."""
    link = choice["link"]
    where = ("in this process" if not link["nodes"] else
             f"on the {link['source']} network ({link['latency'] * 1e3:.3g} ms, "
             f"{link['bandwidth'] / 1e6:.3g} MB/s, {link['nodes']} worker processes)")
    predicted = ", ".join(f"{method} {seconds:.3g} s" for method, seconds in
                          sorted(choice["predicted_seconds"].items(), key=lambda kv: kv[1]))
    return (f"predicted fastest {where}: {predicted}; the fit took "
            f"{choice['measured_seconds']:.3g} s")
