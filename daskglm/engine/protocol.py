"""What solvers may ask of an engine: the verbs, declared.

Solvers reach the data only through these verbs (each one round, written to the ledger),
so any object offering them can stand where an engine does: the in-process and the
distributed engines (:class:`~daskglm.engine.base.Engine`), and a cross-validation fold's
view of one (:class:`~daskglm.engine.folds.TrainingView`, which offers the batch verbs
only).  The protocols are checked by ``tests/test_engine_protocol.py``; a solver names the
one it needs in its docstring.

* :class:`BatchEngine`: one-shot rounds (``reduce``, ``map``) and what the validation
  round learnt (sizes, weights, column moments): what the batch solvers (``normal``,
  ``newton``, ``lbfgs``, ``gd``, ``proximal``) need.
* :class:`EngineVerbs`: all of it: rounds with one item per partition, partition state,
  deadlines, rounds consumed as they complete, parameter holders.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["BatchEngine", "EngineVerbs"]


@runtime_checkable
class BatchEngine(Protocol):
    """One-shot rounds over the partitions, and the validation round's results."""

    n_features: int
    n_partitions: int
    #: total sample weight of the rows (the training rows of a fold)
    sum_weight: float
    #: weighted column sums and sums of squares of ``X`` (None when not known)
    column_moments: Any
    #: powers of two the columns were multiplied by (None: not rescaled)
    column_scale: Any

    @property
    def n_samples(self) -> int:
        """Rows of the data."""

    @property
    def ledger(self):
        """The :class:`~daskglm.accounting.ledger.CommReport` every round is written to."""

    def reduce(self, kernel, *args, kind):
        """ONE round: ``sum(kernel(part, *args))`` over the partitions, in the fixed tree."""

    def map(self, fn, *args, kind):
        """ONE round: ``[fn(part, *args) for part in partitions]``."""


@runtime_checkable
class EngineVerbs(BatchEngine, Protocol):
    """Every verb of the data plane (see :mod:`daskglm.engine`)."""

    #: whether a round crosses processes (a fixed cost worth amortising)
    remote_rounds: bool

    def reduce_each(self, kernel, each, *args, kind):
        """ONE round: as :meth:`reduce`, with ``each[i]`` passed to partition ``i``."""

    def map_each(self, fn, each, *args, kind):
        """ONE round: as :meth:`map`, with ``each[i]`` passed to partition ``i``."""

    def reduce_stateful(self, kernel, state, *args, kind):
        """ONE round with partition state named ``state``: a ``StateRound``."""

    def map_stateful(self, fn, state, *args, kind):
        """As :meth:`reduce_stateful`, one result per partition."""

    def put_state(self, state, states, *, kind="put_state"):
        """ONE round: one state per partition, sent from the driver."""

    def compute_state(self, state, items, summarise, *, kind="compute_state"):
        """ONE round: states computed from Dask collections where the partitions live;
        their summaries returned."""

    def fetch_state(self, state, *, kind="fetch_state"):
        """ONE round: the states, shipped to the driver."""

    def drop_state(self, state):
        """Release the states named ``state`` (no round)."""

    def kept_part(self, family):
        """An engine of the partitions kept in memory when the others are streamed
        (``cache="partial"``), on the same ledger; None otherwise."""

    def keep_states_in_holders(self, state):
        """Keep the states named ``state`` in the partition holders, where there are."""

    def reduce_by_deadline(self, kernel, *args, kind, deadline=None, min_fraction=None):
        """ONE round summing the partitions that arrive in time: a ``DeadlineRound``."""

    def reduce_each_by_deadline(self, kernel, each, *args, kind, deadline=None,
                                min_fraction=None):
        """As :meth:`reduce_by_deadline`, with one item per partition."""

    def map_as_completed(self, fn, *args, kind):
        """ONE round consumed as it completes: an ``AsCompleted``."""

    def parameter_holder(self, params):
        """A versioned parameter vector the partitions' tasks pull and push to."""

    def close(self):
        """Release the partitions."""
