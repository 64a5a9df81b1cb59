#!/usr/bin/env bash
# Makes bench/st_onnx_venv/, the git-ignored virtual environment that the
# st-onnx rows of bench/onnx.py run in (sentence-transformers' ONNX backend):
# the pins of bench/st_onnx_requirements.txt, which cannot be installed
# beside this project's transformers (see that file). About 1.5 GB; the rows'
# other libraries (kzoo's, transformers') stay in .venv.
#
#   bench/st_onnx_env.sh                     # from the repository root
#   PYTHON=python3.11 bench/st_onnx_env.sh   # another base interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
# The base interpreter of .venv by default, so both environments run one Python.
PY=${PYTHON:-$(.venv/bin/python -c 'import sys; print(sys._base_executable)')}
VENV=bench/st_onnx_venv
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet -r bench/st_onnx_requirements.txt
"$VENV/bin/python" -c "import sentence_transformers, optimum.onnxruntime; print('st-onnx rows: $VENV/bin/python, sentence-transformers', sentence_transformers.__version__)"
