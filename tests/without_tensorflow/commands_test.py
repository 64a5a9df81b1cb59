"""The `kzoo` commands that need no SavedModel, without TensorFlow: pretrain
every family, generate, evaluate, embed, similar, finetune; export says
which pip line it needs."""

import pytest

from kzoo.testing import check_without_tensorflow

pytestmark = [pytest.mark.without_tensorflow, pytest.mark.backends("jax", "torch")]

PROGRAM = """
import contextlib, csv, io, random, sys
from kzoo import cli

tmp = sys.argv[1]
rng = random.Random(0)
nouns = "cat dog bird king queen man woman river bank film story".split()
with open(f"{tmp}/corpus.txt", "w") as f:
    for _ in range(12):
        for _ in range(6):
            f.write(f"the {rng.choice(nouns)} sees the {rng.choice(nouns)}. "
                    f"a {rng.choice(nouns)} likes a {rng.choice(nouns)}.\\n")
        f.write("\\n")
with open(f"{tmp}/reviews.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["text", "label"])
    for i in range(16):
        writer.writerow([f"a film , {'good and fun' if i % 2 else 'bad and dull'}",
                         "pos" if i % 2 else "neg"])
tiny = {
    "gpt": "--num-layers 1 --hidden-dim 16 --num-heads 2 --vocabulary-size 300 "
           "--sequence-length 16 --batch-size 16",
    "bert": "--num-layers 1 --hidden-dim 16 --num-heads 2 --vocabulary-size 200 "
            "--sequence-length 16 --batch-size 16",
    "elmo": "--num-layers 1 --hidden-dim 16 --projection-dim 8 "
            "--vocabulary-size 100 --sequence-length 10 --batch-size 16",
    "word2vec": "--hidden-dim 8 --min-count 1 --batch-size 256",
}
corpus = f"{tmp}/corpus.txt"

def run(*args):
    code = cli.main([str(a) for a in args])
    print("EXIT", code, args[0], flush=True)
    return code

for family, options in tiny.items():
    assert run("pretrain", family, "--corpus", corpus, "--output", f"{tmp}/{family}",
               "--epochs", "1", *options.split()) == 0
assert run("generate", "--model", f"{tmp}/gpt", "--prompt", "the cat",
           "--max-length", "8") == 0
assert run("evaluate", "--model", f"{tmp}/gpt", "--corpus", corpus) == 0
assert run("similar", "--model", f"{tmp}/word2vec", "--word", "king") == 0
assert run("embed", "--model", f"{tmp}/elmo", "--text", "the cat sees the dog") == 0
assert run("finetune", "--model", f"{tmp}/bert", "--train", f"{tmp}/reviews.csv",
           "--output", f"{tmp}/classifier", "--epochs", "1", "--batch-size", "8",
           "--sequence-length", "16") == 0
assert run("presets") == 0
stderr = io.StringIO()
with contextlib.redirect_stderr(stderr):
    code = run("export", "--model", f"{tmp}/classifier", "--output", f"{tmp}/served")
assert code == 2 and "kzoo[tensorflow]" in stderr.getvalue(), stderr.getvalue()
print("ALL COMMANDS RAN")
"""


def test_commands_without_tensorflow(tmp_path):
    code = f"import sys; sys.argv = ['x', {str(tmp_path)!r}]\n" + PROGRAM
    out = check_without_tensorflow(code, timeout=1800)
    assert "ALL COMMANDS RAN" in out
