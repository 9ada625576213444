"""The engine: row-partitioned data and the rounds run over it.

:class:`Engine` holds what every backend shares: the core verbs (``reduce``, ``map``,
``map_each``, ``reduce_each``), the ledger record each round writes, and the retry of a
round after partitions were lost with a worker.  The other verbs are grouped by concept,
each in its own module, and mixed in: partition state (:mod:`.state`), deadline rounds
(:mod:`.deadline`), asynchronous work and parameter holders (:mod:`.asynchronous`), and
the validation round with the transformations of the partitions (:mod:`.validation`).
A backend (:mod:`.local`, :mod:`.distributed`, :mod:`.streaming`) supplies how a round
executes (``_execute``, ``_execute_stateful``, ``_execute_deadline``, ...) and how
partitions are transformed where they live."""

from __future__ import annotations

from ..accounting.bytemodel import nbytes, tree_tasks
from ..accounting.ledger import CommReport
from .asynchronous import AsyncVerbs
from .deadline import DeadlineVerbs
from .measure import Timer, tree_partials
from .state import StateVerbs
from .validation import ValidationVerbs

#: Times a round is retried after partitions were lost with a worker.
MAX_RECOVERIES = 3


class Engine(StateVerbs, DeadlineVerbs, AsyncVerbs, ValidationVerbs):
    """Row-partitioned data and the rounds run over it.

    Attributes
    ----------
    cache : {"memory", "none", "partial"}
        Whether the partitions are kept in memory, read from their source every round, or
        some kept and the others read (``streamed_share`` of the bytes).
    n_partitions : int
    n_samples : int
    n_features : int
    sum_weight : float
        Total sample weight (the number of rows when unweighted).
    ledger : CommReport
    split_every : int
        Fan-in of the reduction tree.
    """

    cache = "memory"
    #: the share of the data's bytes each round reads from their source
    streamed_share = 0.0
    #: Whether a round crosses processes: a fixed cost (messages, scheduling) that a
    #: solver taking many small steps amortises over several steps per round.
    remote_rounds = False

    def __init__(self, n_features, ledger=None, split_every=8):
        if split_every < 2:
            raise ValueError(f"split_every must be >= 2; got {split_every}.")
        self.n_features = int(n_features)
        self.ledger = CommReport() if ledger is None else ledger
        #: bytes of the partitions as read, known after the validation round
        self.data_bytes = 0
        #: those bytes when the partitions kept are not as read (float32 copies)
        self.bytes_as_read = None
        #: whether the validation round reads the data from a source (Dask input)
        self.reads_source = False
        self.split_every = int(split_every)
        self.n_samples = 0
        self.sum_weight = 0.0
        #: weighted column sums and sums of squares of ``X``, from the validation round
        self.column_moments = None
        #: powers of two the columns of ``X`` were multiplied by (None: not rescaled)
        self.column_scale = None
        #: partition states by name: one state (or future of one) per partition
        self._states = {}
        #: names of the states kept by partition holders (:meth:`keep_states_in_holders`)
        self._held_names = set()
        self._partition_weights = None
        #: open parameter holders (see :meth:`parameter_holder`)
        self._holders = []

    # verbs ---------------------------------------------------------------------------
    def reduce(self, kernel, *args, kind):
        """One round: ``sum(kernel(part, *args) for part in partitions)``, summed in a tree."""
        return self._round(kernel, args, None, True, kind)

    def map(self, fn, *args, kind):
        """One round: ``[fn(part, *args) for part in partitions]``."""
        return self._round(fn, args, None, False, kind)

    def map_each(self, fn, each, *args, kind):
        """One round: ``[fn(part, item, *args) for part, item in zip(partitions, each)]``.

        ``each`` holds one item per partition, sent to that partition only; ``args`` go to
        every partition.
        """
        return self._round(fn, args, self._check_each(each), False, kind)

    def reduce_each(self, kernel, each, *args, kind):
        """One round: ``sum(kernel(part, item, *args) for part, item in zip(partitions, each))``.

        As :meth:`reduce`, summed in the same fixed-order tree, with ``each`` holding one
        item per partition, sent to that partition only.
        """
        return self._round(kernel, args, self._check_each(each), True, kind)

    def _round(self, fn, args, each, tree, kind):
        """Run one round and write its record: one task per group of partitions."""
        with Timer() as timer, self._probe(kind) as probe:
            result, combine_tasks = self._execute_recovering(fn, args, each, tree, probe)
        groups = probe.groups or len(self.groups)
        tasks = groups + combine_tasks
        sent = groups * nbytes(args) + (0 if each is None else nbytes(each))
        partials, gathered = tree_partials(probe, tasks) if tree else (0, 0)
        returned = partials * nbytes(result) if tree else nbytes(result)
        record = self.ledger.record(
            kind, tasks, sent, returned, timer.seconds, partitions=self.n_partitions,
            groups=groups, split_every=self.split_every if tree else None, probe=probe,
            partials=partials, gathered=gathered,
        )
        record.bytes_read = self.round_bytes_read()
        return result

    def kept_part(self, family):
        """An engine of the partitions kept in memory when the others are read from
        their source in every round (``cache="partial"``); None here: all or none are
        kept (the streaming engines say otherwise)."""
        return None

    def round_bytes_read(self):
        """Bytes a round over every partition reads from the data's source."""
        return int(round(self.data_bytes * self.streamed_share))

    def _execute_recovering(self, fn, args, each, tree, probe):
        """:meth:`_execute`, run again after rebuilding partitions lost with a worker."""
        return self._recovering(lambda: self._execute(fn, args, each, tree, probe))

    def _recovering(self, attempt):
        """``attempt()``, run again after rebuilding partitions lost with a worker."""
        for attempt_number in range(MAX_RECOVERIES + 1):
            try:
                self._recover()
                return attempt()
            except Exception as exc:
                if attempt_number == MAX_RECOVERIES or not self._lost(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _execute(self, fn, args, each, tree, probe):
        """Run ``fn`` over every group: ``(tree sum, combine tasks)`` with ``tree``, else
        ``(per-partition results, 0)``."""
        raise NotImplementedError

    def _lost(self, exc):
        """Whether ``exc`` says partitions were lost (the round can run again)."""
        return False

    def _recover(self):
        """Rebuild the partitions lost with a worker, where that needs the engine's help."""

    def _check_each(self, each):
        each = list(each)
        if len(each) != self.n_partitions:
            raise ValueError(
                f"Need one item per partition: got {len(each)} for "
                f"{self.n_partitions} partitions."
            )
        return each

    def close(self):
        """Release the partitions."""

    # shared --------------------------------------------------------------------------
    def _tree_tasks(self, n):
        return tree_tasks(n, self.split_every)

    def _probe(self, kind):
        """What measures one round of ``kind`` (see :mod:`daskglm.accounting.ledger`)."""
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return (
            f"{type(self).__name__}(n_partitions={self.n_partitions}, "
            f"n_samples={self.n_samples}, n_features={self.n_features})"
        )
