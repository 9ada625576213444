"""The multinomial model's iteration coordinates: one column map for every class, and a
map across the classes that evens out their curvatures.

Near its start the softmax loss's Hessian is close to the Kronecker product
``S (x) E[x x^T]`` of the classes' curvature ``S = diag(p) - p p^T`` (``p`` the class
probabilities) and the columns' second moments.  The column map
(:class:`~.coordinates.Standardised` or :class:`~.coordinates.Whitened`) undoes the second
factor; :func:`class_mixing` undoes the first, where a rare class's directions have a
curvature of about its probability, hundreds of times below the others' (0.1% of the rows
in one class: L-BFGS stopped at 100 iterations short of ``tol``).  Pure numpy, on the
driver.
"""

from __future__ import annotations

import numpy as np

from .coordinates import Standardised

__all__ = ["PerClassCoordinates", "class_mixing", "MAX_CLASS_SCALE"]

#: The most a class direction's curvature is raised by :func:`class_mixing` (its
#: parameters' scale, the square root of this, at most 31.6x).
MAX_CLASS_SCALE = 1e3


def class_mixing(class_curvature, relative_penalty=0.0):
    """The symmetric map ``A`` across the classes, ``params = A theta`` class by class,
    under which the classes' curvature ``S`` reads ``c`` in every direction but the sum
    of the classes.

    ``c`` is the mean of ``diag(S)`` (the softmax's curvature the column maps are scaled
    for).  A direction of ``S`` with curvature ``s`` is scaled by ``sqrt((c + r) / (s +
    r))`` for the penalty's curvature ``r`` relative to the columns' spread (a penalised
    class direction is not as flat as its loss), at most ``sqrt(MAX_CLASS_SCALE)``.  The
    sum of the classes, along which the softmax does not change, is left as it is: ``A``
    keeps the vector of ones, so an iteration from coefficients that add up to zero over
    the classes (where an L2 penalty's optimum lies) stays among them.

    Parameters
    ----------
    class_curvature : ndarray of shape (K, K)
        ``diag(p) - p p^T`` at the start point.
    relative_penalty : float, default 0
        The penalty's curvature over a column's variance (typical over the columns).

    Returns
    -------
    ndarray of shape (K, K)
    """
    curvature = np.asarray(class_curvature, dtype=float)
    n_classes = curvature.shape[0]
    target = float(np.mean(np.diag(curvature)))
    if not (np.all(np.isfinite(curvature)) and target > 0):
        return np.eye(n_classes)
    ones = np.full(n_classes, 1.0 / np.sqrt(n_classes))
    # the sum of the classes gets curvature ``target`` here, hence a scale of 1
    values, vectors = np.linalg.eigh(curvature + target * np.outer(ones, ones))
    goal = target + relative_penalty
    scales = np.sqrt(goal / np.maximum(values + relative_penalty, goal / MAX_CLASS_SCALE))
    return (vectors * scales) @ vectors.T


class PerClassCoordinates:
    """One map (:class:`~.coordinates.Standardised` or :class:`~.coordinates.Whitened`)
    applied to each class's ``(W[k], b[k])`` (or a map of each class's own), then a map
    ``mixing`` across the classes.

    Gradient descent and L-BFGS run in these coordinates on a multinomial problem: every
    class's coefficients see the columns as a single-output problem would, and with
    ``mixing`` (:func:`class_mixing`) a rare class's directions are as curved as the
    others'.  Proximal Newton solves its quadratic model in those of
    :meth:`from_hessian`.  Every map is linear, so ``params = mixing @ rows`` where ``rows`` are the
    classes' ``(coef[, intercept])`` mapped by ``coordinates``.

    Parameters
    ----------
    coordinates : Standardised or Whitened, or a list of them
        The map of one class's ``(coef[, intercept])``, or of each class's
        (:meth:`from_hessian`).
    n_features, n_classes : int
    fit_intercept : bool
    mixing : ndarray of shape (n_classes, n_classes) or None, default None
        A symmetric positive definite map across the classes (None: the identity).
    """

    def __init__(self, coordinates, n_features, n_classes, fit_intercept, mixing=None):
        self._maps = (list(coordinates) if isinstance(coordinates, (list, tuple))
                      else [coordinates] * n_classes)
        #: the first class's map (every class's, unless each has its own)
        self.coordinates = self._maps[0]
        self.n_features = n_features
        self.n_classes = n_classes
        self.fit_intercept = fit_intercept
        self.mixing = None if mixing is None else np.asarray(mixing, dtype=float)
        self._unmixing = None if mixing is None else np.linalg.inv(self.mixing)

    @classmethod
    def from_hessian(cls, hess, n_features, n_classes, fit_intercept):
        """Each class's :meth:`Standardised.from_hessian` of its own block of ``hess``
        (its coefficients and intercept, in the multinomial layout): a rare class's
        block is as curved as the others' in these coordinates."""
        maps = []
        for k in range(n_classes):
            block = list(range(k * n_features, (k + 1) * n_features))
            if fit_intercept:
                block.append(n_classes * n_features + k)
            maps.append(Standardised.from_hessian(hess[np.ix_(block, block)], fit_intercept))
        return cls(maps, n_features, n_classes, fit_intercept)

    @property
    def scales(self):
        """The first class's map's column scales (None: none)."""
        return self.coordinates.scales

    @property
    def means(self):
        """The first class's map's column means (None: none)."""
        return self.coordinates.means

    def jacobian(self, n_params):
        """``d params / d theta`` (every map is linear)."""
        return np.column_stack([self.to_params(unit) for unit in np.eye(n_params)])

    def gradient_factor(self):
        """An upper bound on the largest entry of a gradient in ``params`` over the
        largest of the same gradient in ``theta``: the column maps' largest, times the
        largest row sum of the inverse mixing's magnitudes."""
        factor = max(one.gradient_factor() for one in self._maps)
        if self._unmixing is not None:
            factor *= max(1.0, float(np.abs(self._unmixing).sum(axis=1).max()))
        return factor

    def _per_class(self, vector):
        """Rows ``(W[k][, b[k]])``, shape (K, d [+ 1])."""
        vector = np.asarray(vector, dtype=float)
        n_coef = self.n_features * self.n_classes
        rows = vector[:n_coef].reshape(self.n_classes, self.n_features)
        if self.fit_intercept:
            rows = np.column_stack([rows, vector[n_coef:]])
        return rows

    def _flat(self, rows):
        coef = rows[:, : self.n_features].ravel()
        return np.concatenate([coef, rows[:, -1]]) if self.fit_intercept else coef.copy()

    def _apply(self, method, rows):
        return np.stack([getattr(one, method)(row) for one, row in zip(self._maps, rows)])

    @staticmethod
    def _across(matrix, rows):
        return rows if matrix is None else matrix @ rows

    def to_params(self, theta):
        """``theta -> params``."""
        rows = self._apply("to_params", self._per_class(theta))
        return self._flat(self._across(self.mixing, rows))

    def to_theta(self, params):
        """``params -> theta``."""
        rows = self._across(self._unmixing, self._per_class(params))
        return self._flat(self._apply("to_theta", rows))

    def grad_to_theta(self, grad):
        """A gradient in ``params`` as one in ``theta`` (the mixing is symmetric)."""
        rows = self._across(self.mixing, self._per_class(grad))
        return self._flat(self._apply("grad_to_theta", rows))

    def grad_to_params(self, theta_grad):
        """The inverse of :meth:`grad_to_theta`."""
        rows = self._apply("grad_to_params", self._per_class(theta_grad))
        return self._flat(self._across(self._unmixing, rows))

    def prox(self, penalty, theta, step):
        """The penalty's proximal operator in ``theta``, class by class (every penalty here
        is separable, so this is the operator of the whole vector); not with a mixing,
        which couples the classes' coefficients."""
        if self.mixing is not None:
            raise ValueError("A proximal step needs coordinates without a class mixing.")
        rows = self._per_class(theta)
        return self._flat(np.stack([one.prox(penalty, row, step)
                                    for one, row in zip(self._maps, rows)]))
