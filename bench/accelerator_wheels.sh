#!/usr/bin/env bash
# Prepares what bench/accelerator.py needs on a GPU machine that has no
# network and no TensorFlow, Keras, namex or optree (its image has torch,
# JAX with CUDA, transformers, tokenizers, h5py, ml-dtypes, absl-py, rich,
# packaging and numpy): the wheels of keras 3.15.1 and of the two Keras
# needs that the image lacks, for CPython 3.12 on manylinux x86-64, and the
# word2vec corpus of bench/word2vec.py (gensim's Wikipedia excerpt + Lee
# corpus), all in the git-ignored folder bench/accelerator_carry/.
#
# kzoo's own base dependencies are keras, numpy, h5py and tokenizers: the
# image has all but keras. kzoo itself travels as the working tree and is
# put on PYTHONPATH (no install).
#
# Checks that the folder fits beside the working tree in the 64 MiB that a
# device call carries, and prints the device command and carry list.
#
#   bench/accelerator_wheels.sh            # from the repository root
#   PYTHON=python3 bench/accelerator_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
CARRY=bench/accelerator_carry
LIMIT=$((64 * 1024 * 1024))

mkdir -p "$CARRY/wheels"
rm -f "$CARRY"/wheels/*.whl
"$PY" -m pip download --quiet --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$CARRY/wheels" keras==3.15.1 namex==0.1.0 optree==0.20.0

# The corpus bench/word2vec.py trains on (written from the packaged data
# that examples/train_word2vec.py reads), so that the GPU row's words/s sits
# beside this project's gensim figure on the same text.
CORPUS=runs/word2vec/enwiki_lee.txt
if [ ! -f "$CORPUS" ]; then
    (cd examples && "$PY" -c "import train_word2vec as e; e.write_corpus('../$CORPUS')")
fi
cp "$CORPUS" "$CARRY/enwiki_lee.txt"

echo "wheels:"
ls -l "$CARRY"/wheels/*.whl | awk '{printf "  %10d  %s\n", $5, $9}'
carry_bytes=$(du -sb "$CARRY" | cut -f1)
tree_bytes=$(git ls-files -z --cached --others --exclude-standard \
    | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total=$((carry_bytes + tree_bytes))
printf "carried folder %s: %.1f MiB; working tree: %.1f MiB; together %.1f of 64 MiB\n" \
    "$CARRY" "$(echo "$carry_bytes / 1048576" | bc -l)" \
    "$(echo "$tree_bytes / 1048576" | bc -l)" "$(echo "$total / 1048576" | bc -l)"
if [ "$total" -gt "$LIMIT" ]; then
    echo "too large for one device call (64 MiB)" >&2
    exit 1
fi

cat <<EOF

device run (one call; timeout_s 560 leaves the 8-minute run room to finish):
  carry: ["$CARRY"]
  command:
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $CARRY/wheels/*.whl || exit 1; export PYTHONPATH=/tmp/site:\$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1; nvidia-smi; python3 bench/accelerator.py --out \$OUT --corpus $CARRY/enwiki_lee.txt 2>&1 | tee \$OUT/log.txt
EOF
