"""Column-block model parallelism: tiles of ``X`` next to the shards of their columns.

:class:`ColumnBlocks` cuts every row partition of an engine into feature blocks, the
ranges of the column shards of a :class:`~daskglm.engine.shards.ShardSet`, and keeps
tile ``(r, b)`` on the worker of shard ``b`` (each tile crosses the network once, at the
start: one ``block_split`` round; dense tiles, or CSR tiles of CSR partitions).  :meth:`ColumnBlocks.evaluate` is one
``block_gradient`` round (kernels in :mod:`daskglm.compute.column_blocks`): predictors
of the tiles, summed per row partition next to its targets, residuals back to the tiles,
gradients pushed into the shards.  What crosses the network per round is two vectors of
the row partition's length per tile (``16 n B`` bytes for ``B`` blocks), whatever ``d``;
the pulls and pushes stay on each worker.  See
:func:`daskglm.accounting.costmodel.layout_bytes` for when this beats row partitions.

On a cluster the tasks are submitted here, with the placement that makes this true; in
this process they run in order on the driver.
"""

from __future__ import annotations

import uuid

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..compute.column_blocks import row_loss, take_columns, tile_gradient, tile_predictor
from .distributed import is_worker_loss
from .measure import Timer
from .shards import LOST_ADVICE, ShardLostError

__all__ = ["ColumnBlocks"]


class ColumnBlocks:
    """Tiles ``X[r, b]`` of an engine's row partitions, placed by column shard.

    Parameters
    ----------
    engine : Engine
        Its partitions must hold ``X`` (dense or CSR) in memory.
    shards : ShardSet
        Its ranges are the feature blocks (the last holds the intercept, if fitted).
    n_features : int
    """

    def __init__(self, engine, shards, n_features):
        self.engine = engine
        self.shards = shards
        self.n_features = int(n_features)
        bounds = shards.bounds
        self.columns = [(int(bounds[b]), int(min(bounds[b + 1], n_features)))
                        for b in range(shards.n_shards)]
        self.holds_intercept = [bool(bounds[b + 1] > n_features)
                                for b in range(shards.n_shards)]
        self.client = getattr(engine, "client", None)
        self._futures = []
        with Timer() as timer:
            moved = self._split()
        n_tiles = engine.n_partitions * shards.n_shards
        engine.ledger.record(Kind.BLOCK_SPLIT, 2 * n_tiles, moved, 0, timer.seconds,
                             partitions=n_tiles, groups=n_tiles)
        shards.command("register_range", list(range(engine.n_partitions)))

    def _split(self):
        """Make the tiles where they belong; return the bytes of those that moved."""
        parts = self.engine.parts
        if self.client is None:
            if any(not isinstance(p, tuple) for p in parts):
                raise ValueError("Column blocks need X held in memory.")
            self.tiles = [[take_columns(p, lo, hi) for lo, hi in self.columns] for p in parts]
            return 0
        client = self.client
        self.engine._recover()  # after a lost worker: its partitions made again first
        parts = self.engine.parts
        holders = client.who_has(parts)
        self.part_workers = [(holders.get(p.key) or [None])[0] for p in parts]
        targets = self.shards.clients.addresses
        self.tiles, moved = [], 0
        for part, holder in zip(parts, self.part_workers):
            tiles = []
            for (lo, hi), target in zip(self.columns, targets):
                place = {"workers": [holder]} if holder else {}
                cut = client.submit(take_columns, part, lo, hi, pure=False, **place)
                if holder != target:  # one copy on the shard's worker, then the cut goes
                    size = client.submit(nbytes, cut, pure=False, **place)
                    tile = client.submit(_copy, cut, workers=[target], pure=False)
                    tile.result()
                    cut.release()
                    moved += size.result()
                else:
                    tile = cut
                tiles.append(tile)
            self.tiles.append(tiles)
        return moved

    def evaluate(self, alpha, round_id, family):
        """One round: the loss sums ``array([weight, loss])`` at ``x + alpha d``, the
        gradient sums pushed into the shards for ``round_id``."""
        n_blocks, n_rows = len(self.columns), len(self.tiles)
        with Timer() as timer:
            try:
                stats, pushed, row_lengths = self._evaluate(alpha, round_id, family)
            except ShardLostError:
                raise
            except Exception as exc:
                lost = "" if self.client is None else self.shards.lost()
                if not lost and not is_worker_loss(exc):
                    raise
                raise ShardLostError(f"A round of column blocks failed ({type(exc).__name__}: "
                                     f"{exc}); a worker holding tiles and a shard was lost"
                                     f"{': ' + lost if lost else ''}.  {LOST_ADVICE}") from exc
        ledger = self.engine.ledger
        tasks = 2 * n_rows * n_blocks + n_rows
        # predictors up to the row task, residuals down to the tiles: one vector each
        vectors = 8 * n_blocks * sum(row_lengths)
        ledger.record(Kind.BLOCK_GRADIENT, tasks, vectors + 16 * n_rows * n_blocks,
                      vectors + 16 * n_rows, timer.seconds, partitions=n_rows, groups=n_rows)
        calls = n_rows * n_blocks
        ledger.record(Kind.SHARD_PULL, calls, 16 * calls, 8 * pushed, 0.0,
                      partitions=n_rows, groups=n_rows)
        ledger.record(Kind.SHARD_PUSH, calls, 8 * pushed + 16 * calls, 0, 0.0,
                      partitions=n_rows, groups=n_rows)
        return stats

    def _evaluate(self, alpha, round_id, family):
        shards = self.shards.clients
        parts = self.engine.parts
        if self.client is None:
            stats, pushed, lengths = np.zeros(2), 0, []
            for r, (part, row) in enumerate(zip(parts, self.tiles)):
                etas = [tile_predictor(tile, shards, b, r, alpha, self.holds_intercept[b])
                        for b, tile in enumerate(row)]
                output = row_loss(part, *etas, family=family)
                stats = stats + output[0]
                lengths.append(output[1].shape[0])
                pushed += sum(tile_gradient(tile, output, shards, b, r, round_id,
                                            self.holds_intercept[b])
                              for b, tile in enumerate(row))
            return stats, pushed, lengths
        client, targets = self.client, shards.addresses
        token = uuid.uuid4().hex[:12]
        rows, grads = [], []
        for r, (part, row) in enumerate(zip(parts, self.tiles)):
            etas = [client.submit(tile_predictor, tile, shards, b, r, alpha,
                                  self.holds_intercept[b], workers=[targets[b]], pure=False,
                                  key=f"daskglm_block_eta-{token}-{r}-{b}")
                    for b, tile in enumerate(row)]
            holder = self.part_workers[r]
            output = client.submit(row_loss, part, *etas, family=family, pure=False,
                                   key=f"daskglm_block_row-{token}-{r}",
                                   **({"workers": [holder], "allow_other_workers": True}
                                      if holder else {}))
            rows.append(output)
            grads.extend(client.submit(tile_gradient, tile, output, shards, b, r, round_id,
                                       self.holds_intercept[b], workers=[targets[b]],
                                       pure=False, key=f"daskglm_block_grad-{token}-{r}-{b}")
                         for b, tile in enumerate(row))
        pushed = sum(self._gather(grads))
        summaries = self._gather([client.submit(_summary, o, pure=False) for o in rows])
        stats = np.zeros(2)
        for summary, _ in summaries:
            stats = stats + summary
        return stats, pushed, [length for _, length in summaries]

    def _gather(self, futures):
        """The results of ``futures``; :class:`ShardLostError` within about a second once
        a shard's worker has left (its tiles' tasks, pinned there, would wait forever)."""
        from distributed import wait

        while True:
            try:
                wait(futures, timeout=self.shards.clients.poll)
            except TimeoutError:
                lost = self.shards.lost()
                if lost:
                    self.client.cancel(futures)
                    raise ShardLostError(f"A round of column blocks cannot finish: {lost}.  "
                                         f"{LOST_ADVICE}") from None
                continue
            return self.client.gather(futures)

    def close(self):
        """Release the tiles."""
        for row in getattr(self, "tiles", []):
            for tile in row:
                if hasattr(tile, "release"):
                    tile.release()
        self.tiles = []


def _copy(array):
    return array


def _summary(output):
    return output[0], output[1].shape[0]

