"""Typed solver options: one frozen dataclass per solver, made from the solver's own table of
options and their defaults (``Solver.options``), checked once by the solver when made.

``solver_options`` of every estimator takes one (``LBFGSOptions(memory=20)``) as well as a
plain dict (``{"memory": 20}``): both reach the solver as the same keyword arguments.  The
dataclass names its fields and their defaults, shows them in the estimator's repr, and
refuses an unknown or invalid option when it is made rather than when a fit starts.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from . import SOLVERS

__all__ = ["SolverOptions", "options_type", "options_dict"] + [
    f"{cls.__name__}Options" for cls in SOLVERS.values()]


@dataclasses.dataclass(frozen=True)
class SolverOptions:
    """Base of the typed options: ``solver`` names the solver they are for."""

    solver: ClassVar[str] = ""

    def __post_init__(self):
        SOLVERS[self.solver](**self.as_dict())  # the solver's own checks, once

    def as_dict(self):
        """The options as the solver's keyword arguments."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}

    def given(self):
        """The options set to other than their defaults (what a dict of options would
        hold), for estimators whose own parameters set the others."""
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)
                if getattr(self, field.name) != field.default}


def _field_type(default):
    """The annotation of an option: its default's type, but ``Any`` for options whose
    default is None or ``"auto"`` (they also take numbers)."""
    if default is None or default == "auto":
        return Any
    return type(default) if isinstance(default, (bool, int, float, str)) else Any


def _make(cls):
    fields = [(name, _field_type(default), dataclasses.field(default=default))
              for name, default in cls.options.items()]
    options = dataclasses.make_dataclass(
        f"{cls.__name__}Options", fields, bases=(SolverOptions,), frozen=True,
        namespace={"solver": cls.name, "__module__": __name__,
                   "__doc__": f"The options of ``solver={cls.name!r}`` "
                              f"(:class:`~{cls.__module__}.{cls.__name__}`)."})
    return options


_TYPES = {name: _make(cls) for name, cls in SOLVERS.items()}
globals().update({options.__name__: options for options in _TYPES.values()})


def options_type(name):
    """The options dataclass of solver ``name``."""
    if name not in _TYPES:
        raise ValueError(f"Unknown solver {name!r}; choose one of {sorted(_TYPES)}.")
    return _TYPES[name]


def options_dict(options, name=None, given=False):
    """``solver_options`` (None, a dict or a :class:`SolverOptions`) as a dict of keyword
    arguments (of typed options: all of them, or with ``given`` only those not at their
    defaults); typed options must be those of solver ``name`` when it is given.

    Raises
    ------
    TypeError
        For anything else.
    ValueError
        For typed options of another solver.
    """
    if options is None:
        return None
    if isinstance(options, SolverOptions):
        if name is not None and options.solver != name:
            raise ValueError(f"solver_options are {type(options).__name__} (for solver "
                             f"{options.solver!r}), but the solver is {name!r}.")
        return options.given() if given else options.as_dict()
    if isinstance(options, dict):
        return options
    raise TypeError("solver_options must be a dict, a SolverOptions (e.g. "
                    f"LBFGSOptions(memory=20)) or None; got {type(options).__name__}.")
