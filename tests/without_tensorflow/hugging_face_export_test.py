"""`kzoo export --format transformers` without TensorFlow: a Hugging Face
folder needs no SavedModel, so it is written (and read by transformers) on
JAX or PyTorch alone."""

import pytest

from kzoo.testing import check_without_tensorflow

pytestmark = [pytest.mark.without_tensorflow, pytest.mark.backends("jax", "torch")]

PROGRAM = """
import sys
import numpy as np
import torch
import transformers
import kzoo
from kzoo import cli

tmp = sys.argv[1]
vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film"]
preprocessor = kzoo.models.BertClassifierPreprocessor(
    kzoo.models.BertTokenizer(vocabulary=vocabulary), sequence_length=8)
backbone = kzoo.models.BertBackbone(vocabulary_size=len(vocabulary), num_layers=1,
                                    num_heads=2, hidden_dim=8, intermediate_dim=16,
                                    max_sequence_length=8)
model = kzoo.models.BertClassifier(backbone, 2, preprocessor=preprocessor,
                                   label_names=["neg", "pos"])
rng = np.random.default_rng(0)
for variable in model.weights:
    variable.assign(rng.normal(0, 0.3, variable.shape).astype("float32"))
model.save_to_preset(f"{tmp}/run")
assert cli.main(["export", "--model", f"{tmp}/run", "--output", f"{tmp}/hf",
                 "--format", "transformers"]) == 0
hf = transformers.AutoModelForSequenceClassification.from_pretrained(f"{tmp}/hf").eval()
batch = transformers.AutoTokenizer.from_pretrained(f"{tmp}/hf")(
    ["a good film", "bad"], padding="max_length", max_length=8, return_tensors="pt")
with torch.no_grad():
    logits = hf(**batch).logits.numpy()
np.testing.assert_allclose(logits, model.predict(["a good film", "bad"], verbose=0),
                           atol=1e-5)
assert hf.config.id2label == {0: "neg", 1: "pos"}
print("EXPORTED WITHOUT TENSORFLOW")
"""


def test_transformers_export_without_tensorflow(tmp_path):
    code = f"import sys; sys.argv = ['x', {str(tmp_path)!r}]\n" + PROGRAM
    assert "EXPORTED WITHOUT TENSORFLOW" in check_without_tensorflow(code, timeout=1800)
