"""The fixtures of scikit-learn's own ``conftest.py`` that its translated tests use."""

import numpy as np
import pytest


@pytest.fixture
def global_random_seed():
    """scikit-learn's default seed for tests that take ``global_random_seed``."""
    return 42


@pytest.fixture(params=[np.float32, np.float64])
def global_dtype(request):
    """Both floating dtypes (scikit-learn skips float32 unless asked; daskglm runs it)."""
    return request.param


def pytest_collection_modifyitems(config, items):
    """Leave out the cases of scikit-learn's SGDOneClassSVM (daskglm has none), and mark
    the tests a module lists in ``EXPECTED_FAILURES`` (``{test id: reason}``: the test
    function's name, with its parameters' id for one case) as strict xfails; those it also
    lists in ``BORDERLINE`` (a score at the test's threshold, which passes or fails with
    the versions of numpy and scikit-learn) as xfails that may pass."""
    here = [item for item in items if "sklearn_suite" in item.nodeid]
    other = [item for item in here if "OneClassSVM" in item.name]
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = [item for item in items if item not in other]
    for item in here:
        expected = getattr(item.module, "EXPECTED_FAILURES", {})
        reason = expected.get(item.name, expected.get(item.originalname))
        if reason is not None:
            borderline = getattr(item.module, "BORDERLINE", frozenset())
            strict = item.name not in borderline and item.originalname not in borderline
            item.add_marker(pytest.mark.xfail(reason=reason, strict=strict))


def pytest_configure(config):
    """scikit-learn's own marker of its tests."""
    config.addinivalue_line("markers", "thread_unsafe: a scikit-learn test not run in threads")
