"""Dense CuPy partitions of one GPU stacked into one buffer per array.

A GPU round over many partitions costs one launch of every kernel per partition and one
copy of every partial sum to the host.  When the in-process engine's partitions are dense
CuPy arrays on one device, :class:`DeviceRows` stacks each of their arrays (``X``, ``y``,
the weights, the offset) into one device buffer and makes the partitions row views of it:
a kernel declared :func:`~daskglm.compute.tree.row_additive` then runs once per round on
all the rows (one launch of each kernel, one copy to the host), and every other round
(maps, per-partition states) still sees the partitions it always saw.  The buffers cost
one copy of the data on the device, made only when the device has room for it twice over.
"""

from __future__ import annotations

import numpy as np

from ..backend import is_device, is_device_sparse

__all__ = ["DeviceRows"]

#: Stack only when the device's free memory (CuPy's pool included) is at least this many
#: times the bytes to copy: the kernels' temporaries need room beside the data.
ROOM_FACTOR = 2.0


class DeviceRows:
    """One buffer per array of dense CuPy partitions on one device.

    Use :meth:`of` to make one (None when the partitions are not all dense CuPy arrays of
    one device).  :meth:`whole` gives the stacked partition for the partitions as they are
    now: an array replaced since (the targets encoded, the columns rescaled) is stacked
    again, and the partitions become views of the new buffer.
    """

    def __init__(self):
        # per position in the partition tuple: (the partitions' arrays, their stack)
        self._stacks = {}

    @classmethod
    def of(cls, parts):
        """A :class:`DeviceRows` for ``parts``, or None where stacking does not apply."""
        if not parts or any(not isinstance(part, tuple) or len(part) != len(parts[0])
                            for part in parts):  # delayed partitions: streamed
            return None
        devices = set()
        for part in parts:
            X = part[0]
            if not is_device(X) or is_device_sparse(X) or X.ndim != 2:
                return None
            devices.add(X.device.id)
            if any(a is not None and (not is_device(a) or a.device.id != X.device.id)
                   for a in part[1:]):
                return None
        return cls() if len(devices) == 1 else None

    def whole(self, parts):
        """``(whole, parts)``: the partitions stacked into one, and ``parts`` with each
        array a view of its stack; ``whole`` is None when the device has no room."""
        parts = [list(part) for part in parts]
        stacked = []
        for position in range(len(parts[0])):
            arrays = [part[position] for part in parts]
            if all(a is None for a in arrays):
                stacked.append(None)
                continue
            if any(a is None for a in arrays):
                return None, [tuple(part) for part in parts]
            kept = self._stacks.get(position)
            if kept is not None and all(a is b for a, b in zip(kept[0], arrays)):
                stacked.append(kept[1])
                continue
            stack = _stack(arrays)
            if stack is None:
                return None, [tuple(part) for part in parts]
            views = _row_views(stack, [a.shape[0] for a in arrays])
            for part, view in zip(parts, views):
                part[position] = view
            self._stacks[position] = (views, stack)
            stacked.append(stack)
        return tuple(stacked), [tuple(part) for part in parts]


def _stack(arrays):
    """The arrays concatenated along rows on their device, or None when their dtypes
    differ or the device has no room for the copy."""
    if len({a.dtype for a in arrays}) != 1:
        return None
    if not is_device(arrays[0]):  # numpy: the engine's tests stack host partitions
        return np.concatenate(arrays, axis=0)
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    free += cupy.get_default_memory_pool().free_bytes()
    if free < ROOM_FACTOR * sum(a.nbytes for a in arrays):
        return None
    with cupy.cuda.Device(arrays[0].device.id):
        return cupy.concatenate(arrays, axis=0)


def _row_views(stack, rows):
    """Consecutive row blocks of ``stack`` of the given sizes (views, not copies)."""
    views, start = [], 0
    for count in rows:
        views.append(stack[start:start + count])
        start += count
    return views
