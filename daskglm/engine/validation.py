"""The validation round and the transformations of the partitions where they live.

Every fit begins with one read of the data (:meth:`ValidationVerbs.validate`): sizes,
weights, NaN/inf, labels, column moments and the weighted sums of the target and offset.  Columns of extreme scale are rescaled by
powers of two where they live, and class labels are encoded as 0/1 there
(:meth:`ValidationVerbs.relabel`).

A solver's first evaluation can run in the same round (``first``): the Gram statistics
of the normal equations (the column moments then come from them), or the loss and
gradient (and Hessian) at a start point that does not depend on the validation results.
The round is then recorded under the fused kind, and the result waits in the engine for
the solver (:meth:`ValidationVerbs.take_first_evaluation`).
"""

from __future__ import annotations

import numpy as np

from ..accounting.bytemodel import nbytes
from ..accounting.kinds import Kind
from ..compute.kernels import gram
from ..compute.summaries import (
    PartitionSummary,
    column_max_abs,
    encode_positive,
    gram_moments,
    scale_columns,
    summarize,
    summarize_and_evaluate,
    summarize_gram,
)
from .measure import Timer

#: Columns of ``X`` whose root mean square lies outside ``[2^-SAFE_EXPONENT,
#: 2^SAFE_EXPONENT]`` (about 1e-120 to 1e120) make the kernels' products of two entries,
#: summed over rows, underflow or overflow.
SAFE_EXPONENT = 400


class ValidationVerbs:
    """The validation and transformation verbs of :class:`~daskglm.engine.base.Engine`."""

    #: A first evaluation computed in the validation round, ``(kernel, args, result)``,
    #: until the solver takes it (:meth:`take_first_evaluation`).
    first_evaluation = None

    #: ``(sum w y, sum w offset)`` from the validation round, while no transformation has
    #: changed the targets or weights since (the mean target without a round of its own).
    target_sums = None

    #: Whether the column moments include a sample of the rows' products (the solver
    #: reads it); the rounds that sum the moments again take it as the validation did.
    sample_rows = True

    def validate(self, family, labels=False, rescale=False, first=None, sample_rows=True):
        """One round over the data: row count, total weight, NaN/inf, labels, weights.

        With ``labels``, the distinct target values are collected into ``self.labels``
        instead of being checked against ``family``; ``labels="counts"`` (or
        ``"moments"``) also collects their weighted counts into ``self.label_counts``
        (:func:`daskglm.engine.labels.classes_from_counts`).  The same read sums the columns of
        ``X`` and their squares (``self.column_moments``), which standardising solvers
        need, and with ``sample_rows`` a sample of the rows' products, from which L-BFGS
        and gradient descent decorrelate the columns (``p^2 / 2`` floats a partial: only for
        the solvers that read it).  Raises ValueError naming every problem found.

        Columns whose magnitude is beyond what float64 products can hold (see
        :data:`SAFE_EXPONENT`) are an error, or with ``rescale`` are multiplied by powers
        of two where they live (exact; two more rounds, only then), recorded in
        ``self.column_scale``: coefficients fitted on the rescaled data are multiplied by
        it to apply to the original columns.

        ``first`` (an object with ``kernel``, ``args`` and ``kind``, e.g.
        :class:`~daskglm.solvers.base.FirstEvaluation`) is a solver's first evaluation,
        ``kernel(part, *args)`` summed over the partitions, computed in the same round
        and recorded as one round of ``first.kind``; not with ``labels`` (the targets
        are encoded after this round).  Its result is kept for
        :meth:`take_first_evaluation` unless the round found a problem or columns were
        rescaled (the evaluation was then of other data).
        """
        self.first_evaluation = None
        self.sample_rows = bool(sample_rows)
        if first is not None and labels:
            raise ValueError("A first evaluation cannot share a round that collects labels.")
        if first is None:
            summary: PartitionSummary = self.reduce(summarize, family, labels, None,
                                                    self.sample_rows, kind=Kind.VALIDATE)
            moments = summary.moments
        elif first.kernel is gram:
            fused = self.reduce(summarize_gram, family, kind=first.kind)
            summary = fused.summary
            moments = None if fused.result is None else gram_moments(fused.result)
        else:
            fused = self.reduce(summarize_and_evaluate, family, self.sample_rows,
                                first.kernel, *first.args, kind=first.kind)
            summary, moments = fused.summary, fused.summary.moments
        self.labels = summary.labels
        self.label_counts = summary.label_counts
        # the targets as the solvers see them: not once labels are to be encoded
        self.target_sums = None if labels else (summary.target, summary.offset)
        self.column_moments = moments
        self.data_bytes = self.bytes_as_read or summary.nbytes
        if self.reads_source:  # this round read the data from their source
            self.ledger.records[-1].bytes_read = self.data_bytes
        if summary.problems:
            raise ValueError(" ".join(dict.fromkeys(summary.problems)))
        if summary.rows == 0:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
        if not summary.weight > 0:
            raise ValueError("The sample weights sum to zero; at least one must be positive.")
        self.n_samples = summary.rows
        self.sum_weight = summary.weight
        if first is not None:
            self.keep_first_evaluation(first, fused.result)
        unsafe = self._unsafe_columns()
        if unsafe.any():
            maxima = self.reduce(column_max_abs, kind=Kind.MAXIMA).values
            if not rescale:
                raise ValueError(_scale_message(unsafe, maxima))
            exponents = np.zeros(self.n_features)
            exponents[unsafe & (maxima > 0)] = -np.round(np.log2(maxima[unsafe & (maxima > 0)]))
            scale = np.ldexp(1.0, exponents.astype(int))
            self.first_evaluation = None  # it was of the columns before rescaling
            self._transform(scale_columns, scale, Kind.SCALE)
            summary = self.validate(family, labels, sample_rows=sample_rows)
            self.column_scale = scale
        return summary

    def keep_first_evaluation(self, first, result):
        """Keep ``result`` as the value of ``first`` (a solver's first evaluation, computed
        in the validation round or from what it gathered) for
        :meth:`take_first_evaluation`."""
        self.first_evaluation = None if result is None else (first.kernel, tuple(first.args),
                                                             result)

    def take_first_evaluation(self, kernel, *args):
        """The result of ``kernel(part, *args)`` summed over the partitions if the
        validation round computed exactly that evaluation (same kernel, bit-identical
        arguments), else None; it is handed out once.
        """
        if self.first_evaluation is None:
            return None
        found_kernel, found_args, result = self.first_evaluation
        if found_kernel is not kernel or not _same_arguments(found_args, args):
            return None
        self.first_evaluation = None
        return result

    def _unsafe_columns(self):
        """Columns whose root mean square is outside the safe range (or not finite)."""
        moments = self.column_moments
        if moments is None:
            return np.zeros(self.n_features, dtype=bool)
        with np.errstate(all="ignore"):
            mean_square = moments.squares / self.sum_weight
            unsafe = ~np.isfinite(mean_square) | ~np.isfinite(moments.sums)
            unsafe |= (mean_square < 2.0 ** (-2 * SAFE_EXPONENT)) & (moments.sums != 0)
            unsafe |= mean_square > 2.0 ** (2 * SAFE_EXPONENT)
        return unsafe

    def relabel(self, positive):
        """Replace every partition's targets by ``1.0`` where they equal ``positive``, else 0."""
        self._transform(encode_positive, positive, Kind.ENCODE)

    def _transform(self, fn, arg, kind):
        """One round: ``parts[i] = fn(parts[i], arg)`` where the partitions live."""
        self.target_sums = None
        with Timer() as timer, self._probe(kind) as probe:
            self._replace_parts(fn, arg, probe)
        n = self.n_partitions
        self.ledger.record(kind, n, n * nbytes(arg), 0, timer.seconds, partitions=n, groups=n,
                           probe=probe)

    def _replace_parts(self, fn, arg, probe):
        """``parts[i] = fn(parts[i], arg)`` where the partitions live."""
        raise NotImplementedError


def _same_arguments(first, second):
    """Whether two argument tuples are equal, arrays bit for bit (dtype and shape too)."""
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            a, b = np.asarray(a), np.asarray(b)
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                return False
        elif not (a is b or (type(a) is type(b) and a == b)):
            return False
    return True


def _scale_message(unsafe, maxima):
    columns = np.flatnonzero(unsafe)
    shown = ", ".join(f"{j} (largest |value| {maxima[j]:.3g})" for j in columns[:5])
    more = f" and {columns.size - 5} more" if columns.size > 5 else ""
    return (
        f"X has columns whose values are too large or too small for float64 arithmetic on "
        f"their products: {shown}{more}.  Rescale them (e.g. with "
        f"sklearn.preprocessing.StandardScaler or MaxAbsScaler); without a penalty they "
        f"are rescaled automatically."
    )
