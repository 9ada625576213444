"""The registry of benchmarked methods: ``METHODS[name]`` -> :class:`Method`.

A new method is a :class:`~benchmarks.methods.base.Method` subclass in the module of its
library, listed by that module's ``methods()`` function.  Each method maps a problem's
parameters onto its library's conventions, so that every method of a case minimises the
same objective.
"""

from __future__ import annotations

from benchmarks.methods import (
    dask_glm_algorithms,
    dask_ml_estimators,
    daskglm_estimators,
    glum_estimators,
    h2o_glm,
    intel_and_ibm,
    numpy_kernels,
    sklearn_estimators,
    spark_mllib,
    xgboost_gblinear,
)
from benchmarks.methods.base import Fit, Method, Unsupported

__all__ = ["METHODS", "get_method", "Fit", "Method", "Unsupported"]

#: Every method by its name.
METHODS: dict[str, Method] = {
    method.name: method
    for module in (daskglm_estimators, dask_glm_algorithms, dask_ml_estimators,
                   sklearn_estimators, glum_estimators, intel_and_ibm, xgboost_gblinear,
                   spark_mllib, h2o_glm, numpy_kernels)
    for method in module.methods()
}


def get_method(name):
    """The method called ``name``; a KeyError lists the known names."""
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"Unknown method {name!r}; known: {sorted(METHODS)}.") from None
