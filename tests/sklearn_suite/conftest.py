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
