"""The pieces of a ring allreduce over the partials of a round: flatten, chunk, add, rebuild.

A ring allreduce over ``W`` members, each holding a partial result, cuts every partial
into ``W`` chunks of one flat float64 vector and runs ``W - 1`` reduce-scatter steps
(member ``i`` sends its running sum of one chunk to member ``i + 1``, which adds its own)
and ``W - 1`` all-gather steps (the summed chunks go round once more), so that every
member ends with the whole sum, each having sent ``2 (W - 1) / W`` of one partial.

A partial is any of the additive results of the kernels (:class:`~daskglm.compute.kernels.Stats`,
the per-partition summaries: dataclasses, named tuples and tuples of arrays and numbers);
:func:`flatten` turns it into a vector and a template, :func:`unflatten` back.  The
additions happen in a different order than in the fixed-order tree
(:mod:`daskglm.compute.tree`), so a ring sum equals the tree sum up to round-off.  Nothing
here imports dask.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .sparse_vectors import SparseGradient
from .tree import sum_group

__all__ = ["flatten", "unflatten", "ring_prepare", "ring_add", "ring_pick", "ring_assemble"]


def flatten(obj):
    """``(vector, template)``: every number of ``obj`` in one float64 vector, in order.

    Parameters
    ----------
    obj : ndarray, number, None, tuple, named tuple or dataclass of them

    Returns
    -------
    vector : ndarray of float64
    template
        What :func:`unflatten` needs to rebuild ``obj`` from ``vector``.
    """
    pieces = []
    template = _describe(obj, pieces)
    vector = np.concatenate(pieces) if pieces else np.zeros(0)
    return vector, template


def _describe(obj, pieces):
    if obj is None:
        return ("none",)
    if isinstance(obj, SparseGradient):  # summed densely: the result is a dense vector
        obj = obj.toarray()
    if isinstance(obj, (bool, np.bool_)):
        raise TypeError("A ring allreduce sums numbers and arrays; got a bool.")
    if isinstance(obj, (int, float, np.number)):
        pieces.append(np.asarray([obj], dtype=np.float64))
        return ("scalar", type(obj))
    if isinstance(obj, np.ndarray):
        pieces.append(np.asarray(obj, dtype=np.float64).ravel())
        return ("array", obj.shape, obj.dtype)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = [f.name for f in dataclasses.fields(obj)]
        return ("dataclass", type(obj), fields,
                [_describe(getattr(obj, name), pieces) for name in fields])
    if isinstance(obj, tuple):
        return ("tuple", type(obj), [_describe(item, pieces) for item in obj])
    raise TypeError(f"A ring allreduce cannot sum a {type(obj).__name__}.")


def unflatten(vector, template):
    """The object :func:`flatten` described by ``template``, with the numbers of ``vector``."""
    obj, used = _build(vector, template, 0)
    if used != vector.size:
        raise ValueError(f"The vector has {vector.size} entries; the template uses {used}.")
    return obj


def _build(vector, template, start):
    tag = template[0]
    if tag == "none":
        return None, start
    if tag == "scalar":
        return template[1](vector[start]), start + 1
    if tag == "array":
        shape, dtype = template[1], template[2]
        size = int(np.prod(shape, dtype=np.int64))
        return vector[start:start + size].reshape(shape).astype(dtype, copy=True), start + size
    if tag == "dataclass":
        cls, names, parts = template[1], template[2], template[3]
        values = {}
        for name, part in zip(names, parts):
            values[name], start = _build(vector, part, start)
        return cls(**values), start
    cls, parts = template[1], template[2]
    items = []
    for part in parts:
        item, start = _build(vector, part, start)
        items.append(item)
    return (cls(*items) if hasattr(cls, "_fields") else cls(items)), start


def ring_prepare(nodes, members):
    """A member's start: its complete tree nodes summed left to right, flattened and cut
    into ``members`` chunks.  Returns ``(template, chunks)``."""
    vector, template = flatten(sum_group(*nodes.values()))
    return template, np.array_split(vector, members)


def ring_pick(prepared, chunk):
    """Chunk ``chunk`` of a member's own partial (the first step of the reduce-scatter)."""
    return prepared[1][chunk]


def ring_add(received, prepared, chunk):
    """One reduce-scatter step: the running sum received plus the member's own chunk."""
    return received + prepared[1][chunk]


def ring_assemble(prepared, *chunks):
    """The whole sum from its summed chunks, in chunk order, as the partials' type."""
    return unflatten(np.concatenate(chunks), prepared[0])
