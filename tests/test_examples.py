"""Every script in ``examples/`` runs to completion and prints what it promises."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))

# Patterns each script's standard output must contain; a script without an entry only has
# to exit with status 0.
EXPECTED = {
    "logistic_regression_on_a_cluster.py": [
        r"cluster: 2 workers",
        r"fitted coefficients: \[",
        r"held-out accuracy: 0\.\d+",
        r"n_iter_: \d+ \(converged: True\)",
        r"communication ledger:",
        r"validate\s+1\s",
        r"gradient\s+\d+\s",
        r"total\s+\d+\s",
    ],
    "text_classification.py": [
        r"documents: 40000 in 8 partitions",
        r"features: 65536 hashed columns",
        r"converged: True",
        r"held-out accuracy: 0\.[89]\d+",
    ],
}

TIMEOUT_S = 120


def test_examples_exist():
    assert SCRIPTS, f"no example scripts found in {EXAMPLES}"


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_example_runs(script, tmp_path):
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,  # Dask's scratch files land here, not in the repository
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, (
        f"{script.name} exited with status {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    for pattern in EXPECTED.get(script.name, []):
        assert re.search(pattern, result.stdout), (
            f"{script.name}: output lacks {pattern!r}\n--- stdout ---\n{result.stdout}"
        )
