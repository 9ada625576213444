"""The benchmarks' registry: every entry of every suite names a method that states its
case's problem, and a peer whose library is missing says so instead of failing."""

import importlib.util
import sys

import pytest

from benchmarks.cases import SUITES
from benchmarks.data import DataSpec
from benchmarks.methods import METHODS, Unsupported
from benchmarks.suite import parse_entry


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_entry_names_a_method_that_states_its_problem(suite):
    for case in SUITES[suite].cases:
        for entry in case.methods:
            method = METHODS[parse_entry(entry)[0]]
            assert method.kind == "kernel" or method.supports(case.problem), (case.name, entry)


@pytest.mark.parametrize("name, module", [("sklearnex-lbfgs", "sklearnex"),
                                          ("snapml", "snapml"),
                                          ("xgboost-gblinear", "xgboost"),
                                          ("h2o-glm", "h2o"), ("glum", "glum")])
def test_a_peer_without_its_library_says_what_to_install(name, module, monkeypatch):
    case = SUITES["peers"].cases[0]

    class _Data:
        spec = DataSpec(n_samples=10, n_features=2, n_partitions=1, seed=0)

    # the library missing, whether or not it is installed here
    monkeypatch.setitem(sys.modules, module, None)  # its import raises ImportError
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == module else find_spec(name, *args))
    with pytest.raises(Unsupported, match="not installed"):
        METHODS[name].check(_Data(), case.problem)
