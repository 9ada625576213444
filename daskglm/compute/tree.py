"""The fixed-order tree sum: the same partials add up in the same order on any cluster.

Partial results are summed over a binary tree over the partition indices.  A task that
holds a contiguous run of partitions returns the complete subtrees inside its run
(:func:`complete_nodes`), and combine tasks join them (:func:`combine_nodes`), so the sum
depends only on the number of partitions, never on how many workers there are or which
task finished first: results agree across clusters to the last bit.
"""

from __future__ import annotations

__all__ = [
    "tree_sum", "complete_nodes", "combine_nodes", "tree_root", "tree_children", "node_start",
    "run_group", "run_stateful_group", "partial_tree_sum", "row_additive", "is_row_additive",
    "maximal_nodes",
]


def row_additive(kernel):
    """Declare that ``kernel(part, *args)`` is a sum over the rows of ``part``: run on the
    rows of several partitions stacked into one, it gives the tree sum of its results on
    each (round-off apart).  Engines that hold partitions stacked in one buffer (CuPy
    partitions on one GPU, :mod:`daskglm.engine.device_rows`) run such a kernel once per
    round instead of once per partition."""
    kernel.row_additive = True
    return kernel


def is_row_additive(kernel) -> bool:
    """Whether ``kernel`` was declared :func:`row_additive`."""
    return getattr(kernel, "row_additive", False)


def tree_sum(items):
    """Sum ``items`` in the fixed-order binary tree over their positions.

    Node ``(level, k)`` of the tree over ``n`` items covers items ``[k 2^level, (k + 1)
    2^level)`` (clipped to ``n``) and is the sum of its two children, left plus right.
    Engines reduce partials in exactly this order, so the result depends on neither which
    worker finished first nor how partitions were grouped into tasks.
    """
    items = list(items)
    if not items:
        raise ValueError("Nothing to sum.")
    leaves = {(0, i): item for i, item in enumerate(items)}
    return complete_nodes(leaves, len(items))[tree_root(len(items))]


def sum_group(*group):
    """Sum the arguments left to right."""
    total = group[0]
    for item in group[1:]:
        total = total + item
    return total


def tree_root(n_leaves):
    """The root node ``(level, 0)`` of the reduction tree over ``n_leaves`` leaves."""
    level = 0
    while 2**level < n_leaves:
        level += 1
    return (level, 0)


def tree_children(node, n_leaves):
    """The children of ``node = (level, k)`` that exist in the tree over ``n_leaves``."""
    level, index = node
    width = 2 ** (level - 1)
    return [(level - 1, j) for j in (2 * index, 2 * index + 1) if j * width < n_leaves]


def node_start(node):
    """The first leaf under ``node``."""
    level, index = node
    return index * 2**level


def complete_nodes(nodes, n_leaves):
    """The largest subtrees of the reduction tree that ``nodes`` complete, with their sums.

    ``nodes`` maps tree nodes (leaves ``(0, i)`` or larger subtrees) to their sums; a
    parent is summed wherever all its children are present.  Returns ``{node: sum}`` for
    the maximal nodes found, ordered by position.  Whoever holds every returned node can
    finish the tree, and the total is the same however the leaves were split up.
    """
    found = dict(nodes)
    top = set(found)
    root_level = tree_root(n_leaves)[0]
    lowest = min((level for level, _ in found), default=root_level)
    for level in range(lowest + 1, root_level + 1):
        parents = sorted({(level, k // 2) for lower, k in found if lower == level - 1})
        for parent in parents:
            children = tree_children(parent, n_leaves)
            if parent not in found and all(child in found for child in children):
                found[parent] = sum_group(*(found[child] for child in children))
                top.difference_update(children)
                top.add(parent)
    return {node: found[node] for node in sorted(top, key=node_start)}


def maximal_nodes(indices, n_leaves):
    """The nodes that :func:`complete_nodes` returns for the leaves ``indices``, each with
    the leaves under it: ``[(node, [leaf, ...]), ...]`` in order of position.

    Where a kernel is a sum over rows (:func:`row_additive`), running it once on the rows
    of a node's leaves stacked together gives that node's sum, round-off apart."""
    present = set(indices)
    root_level = tree_root(n_leaves)[0]
    nodes, position = [], 0
    for leaf in sorted(present):
        if leaf < position:
            continue
        level = 0
        while level < root_level and leaf % 2 ** (level + 1) == 0 and all(
                i in present for i in range(leaf, min(leaf + 2 ** (level + 1), n_leaves))):
            level += 1
        position = min(leaf + 2**level, n_leaves)
        nodes.append(((level, leaf // 2**level), list(range(leaf, position))))
    return nodes


def combine_nodes(n_leaves, *node_sets):
    """One combine task: the complete nodes of the union of the ``node_sets`` it gathers."""
    merged = {}
    for node_set in node_sets:
        merged.update(node_set)
    return complete_nodes(merged, n_leaves)


def run_group(fn, parts, items, args, indices=None, n_leaves=None):
    """Run ``fn`` on the partitions of one task, in order.

    ``fn(part, item, *args)`` when ``items`` holds one item per partition, else
    ``fn(part, *args)``.  Engines run one such call per group of partitions that share a
    worker thread, so a round costs one task per thread, not one per partition.

    Returns the list of results, or with ``indices`` (the partitions' positions among
    ``n_leaves``) the complete nodes of the reduction tree they make
    (:func:`complete_nodes`).
    """
    if items is None:
        results = [fn(part, *args) for part in parts]
    else:
        results = [fn(part, item, *args) for part, item in zip(parts, items)]
    if indices is None:
        return results
    return complete_nodes({(0, i): result for i, result in zip(indices, results)}, n_leaves)


def run_stateful_group(fn, parts, states, args, indices=None, n_leaves=None):
    """Run a stateful kernel on the partitions of one task, in order.

    ``fn(part, state, *args)`` returns ``(result, new_state)``; ``states`` holds each
    partition's state from the previous round (None on the first).  Returns ``(out,
    new_states)``: ``out`` is what :func:`run_group` returns for the results (the list, or
    with ``indices`` the complete nodes of the reduction tree), ``new_states`` the list of
    new states, in the order of ``parts``.
    """
    results, new_states = [], []
    for part, state in zip(parts, states):
        result, new_state = fn(part, state, *args)
        results.append(result)
        new_states.append(new_state)
    if indices is None:
        return results, new_states
    return complete_nodes({(0, i): r for i, r in zip(indices, results)}, n_leaves), new_states


def partial_tree_sum(items, n_leaves):
    """Sum ``items`` (``{leaf index: value}``, some leaves missing) in the fixed-order tree
    over ``n_leaves`` leaves, restricted to the leaves present.

    Every node is the sum of its children that have a present leaf under them, left plus
    right; a node with one such child is that child.  The result is therefore the one the
    full tree (:func:`tree_sum`) gives when the missing leaves are exact zeros, and it
    depends only on which leaves are present, never on the order they came in.  None when
    no leaf is present.
    """
    if not items:
        return None

    def node_sum(level, index):
        if level == 0:
            return items.get(index)
        present = [s for s in (node_sum(level - 1, 2 * index), node_sum(level - 1, 2 * index + 1))
                   if s is not None]
        return sum_group(*present) if present else None

    return node_sum(*tree_root(n_leaves))
