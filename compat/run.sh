#!/usr/bin/env bash
# Run scikit-learn's linear-model test modules against daskglm (see README.md).
# Usage: compat/run.sh [module ...]   (default: the five modules); extra pytest args via
# PYTEST_ARGS, a -k expression via PYTEST_K
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-python}"
SKL="$("$PY" -c 'import os, sklearn; print(os.path.dirname(sklearn.__file__))')"
MODULES=("$@")
[ ${#MODULES[@]} -eq 0 ] && MODULES=(test_logistic test_ridge test_coordinate_descent test_base test_sgd)
OUTDIR="${OUTDIR:-$HERE/results}"
mkdir -p "$OUTDIR"
for m in "${MODULES[@]}"; do
  echo "== $m"
  PYTHONPATH="$ROOT:$HERE" timeout -s INT -k 60 "${TIMEOUT:-900}" nice "$PY" -m pytest -q -p no:cacheprovider \
    -p daskglm_adapter -c "$HERE/pytest.ini" --rootdir="$SKL" -rfE --durations=10 \
    -W ignore::DeprecationWarning ${PYTEST_ARGS:-} ${PYTEST_K:+-k "$PYTEST_K"} \
    "$SKL/linear_model/tests/$m.py" > "$OUTDIR/$m.txt" 2>&1
  echo "exit $?"; tail -1 "$OUTDIR/$m.txt"
done
