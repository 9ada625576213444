"""The engines offer the verbs the solvers may ask for (:mod:`daskglm.engine.protocol`),
with the same parameters, and a cross-validation fold's view offers the batch verbs."""

import inspect

import numpy as np
import pytest

from daskglm.engine import make_engine
from daskglm.engine.distributed import DistributedEngine
from daskglm.engine.folds import TrainingView, fold_ids_by_partition
from daskglm.engine.local import LocalEngine
from daskglm.engine.protocol import BatchEngine, EngineVerbs
from daskglm.model.families import Gaussian
from tests.conftest import make_data


def _verbs(protocol):
    return {name: member for name, member in vars(protocol).items()
            if callable(member) and not name.startswith("_")}


def _same_parameters(declared, implemented):
    wanted = [(p.name, p.kind) for p in inspect.signature(declared).parameters.values()]
    got = [(p.name, p.kind) for p in inspect.signature(implemented).parameters.values()]
    return wanted == got


@pytest.mark.parametrize("engine_class", [LocalEngine, DistributedEngine])
def test_engines_offer_every_verb_with_its_parameters(engine_class):
    for protocol in (BatchEngine, EngineVerbs):
        for name, declared in _verbs(protocol).items():
            implemented = getattr(engine_class, name)
            assert _same_parameters(declared, implemented), (engine_class.__name__, name)


def test_an_engine_and_a_folds_view_satisfy_their_protocols():
    X, y, _ = make_data("gaussian", n=400)
    with make_engine(X, y, family=Gaussian(), client=None, n_partitions=4) as engine:
        assert isinstance(engine, EngineVerbs) and isinstance(engine, BatchEngine)
        folds = np.arange(X.shape[0]) % 2
        view = TrainingView(engine, fold_ids_by_partition(engine, folds), 0)
        assert isinstance(view, BatchEngine) and not isinstance(view, EngineVerbs)
        for name, declared in _verbs(BatchEngine).items():
            assert _same_parameters(declared, getattr(TrainingView, name)), name
