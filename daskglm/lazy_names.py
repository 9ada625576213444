"""Public names imported on first use, for the package ``__init__`` modules.

A worker that unpickles one task function imports that function's module and the
packages above it; if those packages imported all their modules eagerly, a cold worker
would import the whole library (scikit-learn included) before its first task.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_names"]


def lazy_names(package, exports, *, submodules=False):
    """``(__getattr__, __dir__)`` of a package whose public names live in its modules.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : dict
        Public name -> the module of the package that defines it (relative, no dot).
    submodules : bool, default False
        Whether other attribute names are looked up as submodules of the package.
    """

    def __getattr__(name):
        if name in exports:
            value = getattr(importlib.import_module(f".{exports[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        if submodules:
            try:  # e.g. daskglm.estimators before anything imported it
                return importlib.import_module(f".{name}", package)
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
