"""A problem's loss as the engine evaluates it: which kernel a round runs, with which
arguments, and what the loss's shape means for the solvers.

:func:`loss_of` is the one place that tells a single-output problem (a GLM family and
link) from the multinomial one.  Solvers ask the loss object, never the problem's type:

* :meth:`Loss.evaluation` -- the partition kernel and its arguments for a round of loss
  and gradient sums (and the Hessian's);
* :attr:`Loss.exact_hessian` -- whether Newton's Hessian is the objective's own;
* :meth:`Loss.per_class` -- a change of coordinates of one coefficient vector, applied to
  each output's (and, given the classes' curvature, one across the outputs);
* :attr:`Loss.single_output` -- one coefficient vector (a duality gap and a start on part
  of the data are defined for it);
* :meth:`Loss.evaluation_from_class_counts` -- the first evaluation at zero coefficients
  from the validation round's per-class column sums, when that round found the classes.

The per-row formulas are the family's (:mod:`daskglm.model.families`, the generic array
code every backend runs) and, where it names one (:meth:`Family.compiled_loss`), its
compiled loop (:mod:`.fused_loops`), which :func:`~.kernels.loss_grad` takes on dense
numpy partitions.
"""

from __future__ import annotations

import numpy as np

from ..model.problem import Feature
from .class_coordinates import PerClassCoordinates, class_mixing
from .kernels import loss_grad, loss_grad_hess
from .label_counts import loss_grad_by_class, softmax_loss_grad_by_class
from .multinomial import multinomial_loss_grad, multinomial_loss_grad_hess

__all__ = ["Loss", "FamilyLoss", "SoftmaxLoss", "loss_of"]


class Loss:
    """The loss of one problem, as its rounds evaluate it (see the module docstring)."""

    #: Whether the parameters are one coefficient vector (and intercept).
    single_output = True

    def evaluation(self, params, hessian=False):
        """``(kernel, args)``: ``kernel(part, *args)`` sums the loss and gradient at
        ``params`` over a partition's rows, and the Hessian with ``hessian``."""
        raise NotImplementedError

    @property
    def exact_hessian(self) -> bool:
        """Whether the Hessian kernel gives the objective's own second derivative (so
        that Newton's steps converge quadratically), not its expectation."""
        raise NotImplementedError

    def per_class(self, coordinates, class_curvature=None, relative_penalty=0.0):
        """``coordinates`` of one coefficient vector, applied to every output's; with
        several outputs and their ``class_curvature`` (``diag(p) - p p^T``), followed by
        the map across them that evens it out
        (:func:`~.class_coordinates.class_mixing`, with ``relative_penalty``)."""
        return coordinates

    def evaluation_from_class_counts(self, counts, class_weights, params):
        """The loss and gradient sums at ``params`` (zero coefficients) from per-class
        column sums (a :class:`~.label_counts.LabelCounts` with moments), or None when
        they do not give them."""
        return None


class FamilyLoss(Loss):
    """A per-row loss of the linear predictor (a GLM family and link, or one of the SGD
    losses of :mod:`.sgd_losses`), one coefficient vector."""

    def __init__(self, family, fit_intercept):
        self.family = family
        self.fit_intercept = fit_intercept

    def evaluation(self, params, hessian=False):
        kernel = loss_grad_hess if hessian else loss_grad
        return kernel, (params, self.family, self.fit_intercept)

    @property
    def exact_hessian(self):
        return bool(getattr(self.family, "exact_hessian", False))

    def evaluation_from_class_counts(self, counts, class_weights, params):
        if counts.labels.size != 2:
            return None
        return loss_grad_by_class(counts, np.arange(2.0), class_weights, params,
                                  self.family, self.fit_intercept)


class SoftmaxLoss(Loss):
    """The multinomial model's softmax loss: one coefficient vector per class."""

    single_output = False
    exact_hessian = True

    def __init__(self, n_classes, n_features, fit_intercept):
        self.n_classes = n_classes
        self.n_features = n_features
        self.fit_intercept = fit_intercept

    def evaluation(self, params, hessian=False):
        kernel = multinomial_loss_grad_hess if hessian else multinomial_loss_grad
        return kernel, (params, self.n_classes, self.fit_intercept)

    def per_class(self, coordinates, class_curvature=None, relative_penalty=0.0):
        mixing = (None if class_curvature is None
                  else class_mixing(class_curvature, relative_penalty))
        return PerClassCoordinates(coordinates, self.n_features, self.n_classes,
                                   self.fit_intercept, mixing)

    def evaluation_from_class_counts(self, counts, class_weights, params):
        return softmax_loss_grad_by_class(counts, class_weights, params, self.n_classes,
                                          self.fit_intercept)


def loss_of(problem) -> Loss:
    """The :class:`Loss` of ``problem``."""
    if Feature.MULTINOMIAL in problem.features():
        return SoftmaxLoss(problem.n_classes, problem.n_features, problem.fit_intercept)
    return FamilyLoss(problem.family, problem.fit_intercept)
