"""Hostile or broken preset files: each refused fast, clearly, in bounded memory.

Every case starts from a valid tiny preset folder, damages one file and
loads it. The error must name the file and say what to do, come in under a
second, and the process must not grow by a gigabyte getting there.
"""

import json
import resource
import shutil
import struct
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_converter import AllenNlpElmoSource
from kzoo.models.gpt.gpt_backbone import GPTBackbone
from kzoo.presets.errors import PresetError
from kzoo.testing import to_numpy
from tests.models.bert.bert_classifier_test import tiny_classifier

# The bound is on this process's CPU time: the test machines are shared, and
# wall time there measures the neighbours too (the wall bound only catches a
# load that runs on and on).
SECONDS = 1.0
WALL_SECONDS = 60.0
MAX_RSS_GROWTH_BYTES = 1 << 30
_BIG_LINE_BYTES = 100 << 20  # a sparse file: no disk or memory spent on it


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile") / "tiny_bert"
    classifier = tiny_classifier()
    classifier.backbone.save_to_preset(str(folder))
    classifier.preprocessor.tokenizer.save_to_preset(str(folder))
    return folder


def _edit_config(**changes):
    def edit(folder):
        path = folder / "config.json"
        config = json.loads(path.read_text())
        config["config"].update(changes)
        path.write_text(json.dumps(config))
    return edit


def _write_bytes(name, data):
    def edit(folder):
        (folder / name).write_bytes(data)
    return edit


def _big_line(name):
    def edit(folder):
        path = folder / name
        with open(path, "wb") as f:
            f.write(b"[PAD]\n")
            f.truncate(_BIG_LINE_BYTES)  # one 100 MB line of NUL bytes
    return edit


def _vocabulary_bytes(data):
    return _write_bytes("assets/tokenizer/vocabulary.txt", data)


def _reshape_weight(folder):
    with h5py.File(folder / "model.weights.h5", "r+") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        name = next(n for n in names if f[n].ndim == 2)  # the first table
        del f[name]
        f[name] = np.zeros((3, 5), "float32")


def _string_weight(folder):
    with h5py.File(folder / "model.weights.h5", "r+") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        name = next(n for n in names if f[n].ndim == 2)  # the first table
        shape = f[name].shape
        del f[name]
        f[name] = np.full(shape, b"x", dtype="S1")


def _hugging_face_folder(folder):
    """A Hugging Face BERT folder whose safetensors header promises a tensor
    past the end of the file."""
    for item in list(folder.iterdir()):
        shutil.rmtree(item) if item.is_dir() else item.unlink()
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "architectures": ["BertModel"],
        "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16,
        "max_position_embeddings": 16, "type_vocab_size": 2}))
    header = json.dumps({"embeddings.word_embeddings.weight": {
        "dtype": "F32", "shape": [10, 8], "data_offsets": [0, 10**12]}}).encode()
    (folder / "model.safetensors").write_bytes(
        struct.pack("<Q", len(header)) + header + b"\0" * 320)
    (folder / "vocab.txt").write_text("\n".join(f"t{i}" for i in range(10)))


def _load_backbone(folder):
    return BertBackbone.from_preset(str(folder))


def _load_tokenizer(folder):
    return BertTokenizer.from_preset(str(folder))


# (case, damage, loader, message fragments: the file, the field, the fix)
CASES = [
    ("vocabulary_size 10^12", _edit_config(vocabulary_size=10**12), _load_backbone,
     ["config.json", "vocabulary_size", "GiB", "Fix the value"]),
    ("max_sequence_length 10^12", _edit_config(max_sequence_length=10**12),
     _load_backbone, ["config.json", "max_sequence_length", "GiB", "Fix the value"]),
    ("num_layers 10^6", _edit_config(num_layers=10**6), _load_backbone,
     ["config.json", "num_layers", "at most", "Fix the value"]),
    ("negative size", _edit_config(vocabulary_size=-5), _load_backbone,
     ["config.json", "vocabulary_size", "positive int", "Fix the value"]),
    ("non-integer size", _edit_config(hidden_dim=3.5), _load_backbone,
     ["config.json", "hidden_dim", "positive int", "Fix the value"]),
    ("size as a string", _edit_config(num_heads="2"), _load_backbone,
     ["config.json", "num_heads", "positive int"]),
    ("size as a bool", _edit_config(num_layers=True), _load_backbone,
     ["config.json", "num_layers", "positive int"]),
    ("config not JSON", _write_bytes("config.json", b'{"config": {'), _load_backbone,
     ["config.json", "not valid UTF-8 JSON", "Write it again"]),
    ("config invalid UTF-8", _write_bytes("config.json", b'{"a": "\xff\xfe"}'),
     _load_backbone, ["config.json", "not valid UTF-8 JSON"]),
    ("config 100 MB line", _big_line("config.json"), _load_backbone,
     ["config.json", "bytes", "Write it again"]),
    ("weights of the wrong shape", _reshape_weight, _load_backbone,
     ["model.weights.h5", "has shapes", "same checkpoint"]),
    ("weights of the wrong dtype", _string_weight, _load_backbone,
     ["model.weights.h5", "corrupt"]),
    ("weights not hdf5", _write_bytes("model.weights.h5", b"not an hdf5 file" * 64),
     _load_backbone, ["model.weights.h5", "corrupt"]),
    ("vocabulary invalid UTF-8", _vocabulary_bytes(b"[PAD]\n[UNK]\n\xff\xfe\n"),
     _load_tokenizer, ["vocabulary.txt", "line 3", "UTF-8", "Save the tokenizer"]),
    ("vocabulary 100 MB line", _big_line("assets/tokenizer/vocabulary.txt"),
     _load_tokenizer, ["vocabulary.txt", "line 2", "longer than", "Save the tokenizer"]),
    ("safetensors header past the file end", _hugging_face_folder, _load_backbone,
     ["model.safetensors", "Download or save the checkpoint again"]),
]


def _max_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def assert_refused_fast_and_clearly(case, load, fragments):
    """``load()`` raises a PresetError holding every fragment, in under
    ``SECONDS`` of CPU time, the peak memory growing by less than
    ``MAX_RSS_GROWTH_BYTES``."""
    rss_before = _max_rss_bytes()
    start, cpu_start = time.perf_counter(), time.process_time()
    with pytest.raises(PresetError) as info:
        load()
    elapsed = time.process_time() - cpu_start
    assert time.perf_counter() - start < WALL_SECONDS
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{case}: {fragment!r} not in {message!r}"
    assert elapsed < SECONDS, f"{case}: refused after {elapsed:.2f} s of CPU time"
    assert _max_rss_bytes() - rss_before < MAX_RSS_GROWTH_BYTES


@pytest.mark.parametrize("case,damage,load,fragments", CASES, ids=[c[0] for c in CASES])
def test_hostile_preset_is_refused_fast_and_clearly(preset, tmp_path, case, damage,
                                                    load, fragments):
    folder = tmp_path / "damaged"
    shutil.copytree(preset, folder)
    damage(folder)
    assert_refused_fast_and_clearly(case, lambda: load(folder), fragments)


def test_the_valid_preset_still_loads(preset):
    assert BertBackbone.from_preset(str(preset)).count_params() > 0


# AllenNLP ELMo folders: options.json + the bilm-tf weights hdf5.
ELMO_WEIGHTS = "lm_weights.hdf5"


@pytest.fixture(scope="module")
def elmo_folder(allennlp_elmo):
    return allennlp_elmo


@pytest.fixture(scope="module")
def elmo_backbone(elmo_folder):
    """The fixture's ELMo, loaded: a failed load must leave it as it is."""
    return ElmoBackbone.from_preset(str(elmo_folder))


def _edit_options(section, **changes):
    def edit(folder):
        path = folder / "options.json"
        options = json.loads(path.read_text())
        options[section].update(changes)
        path.write_text(json.dumps(options))
    return edit


def _replace_dataset(name, make):
    """Replaces dataset ``name`` by ``make(shape)`` (``None``: deletes it)."""
    def edit(folder):
        with h5py.File(folder / ELMO_WEIGHTS, "r+") as f:
            shape = f[name].shape
            del f[name]
            value = make(shape)
            if value is not None:
                f[name] = value
    return edit


def _truncate(name, size):
    def edit(folder):
        with open(folder / name, "r+b") as f:
            f.truncate(size)
    return edit


# (case, damage, message fragments); the options cases are refused before a
# layer is built, the weights cases before a variable is assigned.
ELMO_OPTIONS_CASES = [
    ("n_layers 10^6", _edit_options("lstm", n_layers=10**6),
     ["options.json", "`lstm.n_layers`=1000000 (kzoo's `num_layers`)", "at most",
      "Fix the value"]),
    ("dim 10^12", _edit_options("lstm", dim=10**12),
     ["options.json", "`lstm.dim`=1000000000000", "GiB", "Fix the values"]),
    ("filter count 10^9", _edit_options("char_cnn", filters=[[1, 4], [2, 10**9]]),
     ["options.json", "`char_cnn.filters`", "GiB"]),
    ("filters not pairs", _edit_options("char_cnn", filters=[[1, 4, 5]]),
     ["options.json", "`char_cnn.filters`", "[width, count] pairs", "`filters=`"]),
    ("projection_dim as a string", _edit_options("lstm", projection_dim="16"),
     ["`lstm.projection_dim` in", "options.json", "`projection_dim`", "positive int"]),
    ("n_highway negative", _edit_options("char_cnn", n_highway=-1),
     ["`char_cnn.n_highway` in", "int >= 0"]),
    ("max_characters_per_token 10^12",
     _edit_options("char_cnn", max_characters_per_token=10**12),
     ["`char_cnn.max_characters_per_token` in", "`max_word_length`", "at most 1024"]),
    ("embedding not an object", _edit_options("char_cnn", embedding=[4]),
     ["`char_cnn.embedding` in", "options.json", "`dim`"]),
]
ELMO_WEIGHTS_CASES = [
    ("dataset of the wrong shape",
     _replace_dataset("CNN_proj/W_proj", lambda shape: np.zeros((3, 5), "float32")),
     [ELMO_WEIGHTS, "CNN_proj/W_proj has shape (3, 5)", "ask for (124, 16)",
      "options.json", "Nothing was loaded"]),
    ("dataset of strings",
     _replace_dataset("CNN_high_0/b_carry", lambda shape: np.full(shape, b"x", "S1")),
     [ELMO_WEIGHTS, "CNN_high_0/b_carry holds |S1 values, not floats",
      "Nothing was loaded"]),
    ("dataset of ints",
     _replace_dataset("RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/B",
                      lambda shape: np.ones(shape, "int32")),
     [ELMO_WEIGHTS, "Cell1/LSTMCell/B holds int32 values", "Nothing was loaded"]),
    ("dataset missing",
     _replace_dataset("RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0", lambda shape: None),
     [ELMO_WEIGHTS, "dataset RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0 is missing",
      "options file released with these weights"]),
    ("weights not hdf5", _write_bytes(ELMO_WEIGHTS, b"not an hdf5 file" * 64),
     [ELMO_WEIGHTS, "not readable as HDF5", "download it again"]),
    ("weights truncated", _truncate(ELMO_WEIGHTS, 4096),
     [ELMO_WEIGHTS, "not readable as HDF5", "download it again"]),
]


def _damaged_elmo(elmo_folder, tmp_path, damage):
    folder = tmp_path / "damaged"
    folder.mkdir()
    for name in ("options.json", ELMO_WEIGHTS):
        shutil.copy(elmo_folder / name, folder / name)
    damage(folder)
    return folder


@pytest.mark.parametrize("case,damage,fragments", ELMO_OPTIONS_CASES,
                         ids=[c[0] for c in ELMO_OPTIONS_CASES])
def test_hostile_elmo_options_are_refused(elmo_folder, tmp_path, case, damage,
                                          fragments):
    folder = _damaged_elmo(elmo_folder, tmp_path, damage)
    assert_refused_fast_and_clearly(
        case, lambda: ElmoBackbone.from_preset(str(folder)), fragments)


@pytest.mark.parametrize("case,damage,fragments", ELMO_WEIGHTS_CASES,
                         ids=[c[0] for c in ELMO_WEIGHTS_CASES])
def test_hostile_elmo_weights_are_refused_and_change_nothing(
        elmo_folder, elmo_backbone, tmp_path, case, damage, fragments):
    folder = _damaged_elmo(elmo_folder, tmp_path, damage)
    before = [to_numpy(w).copy() for w in elmo_backbone.weights]
    # Loaded into a built backbone: the time is the weights' check alone.
    source = AllenNlpElmoSource(folder)
    assert_refused_fast_and_clearly(
        case, lambda: source.load_backbone_weights(elmo_backbone), fragments)
    for weight, value in zip(elmo_backbone.weights, before):
        np.testing.assert_array_equal(to_numpy(weight), value, err_msg=weight.path)
    with pytest.raises(PresetError, match=ELMO_WEIGHTS):  # from_preset says it too
        ElmoBackbone.from_preset(str(folder))


# Hugging Face folders: a size refused is named as the config.json writes it.
def _hugging_face_config(folder, config):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


BERT_CONFIG = {"model_type": "bert", "vocab_size": 10, "hidden_size": 8,
               "num_hidden_layers": 1, "num_attention_heads": 2,
               "intermediate_size": 16, "max_position_embeddings": 16,
               "type_vocab_size": 2}
GPT2_CONFIG = {"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1,
               "n_head": 2, "n_positions": 16}
# (case, backbone class, config, from_preset overrides, message fragments)
HUGGING_FACE_CASES = [
    ("BERT num_hidden_layers 10^6", BertBackbone,
     {**BERT_CONFIG, "num_hidden_layers": 10**6}, {},
     ["config.json", "`num_hidden_layers`=1000000 (kzoo's `num_layers`)", "at most 512",
      "`num_layers=`"]),
    ("BERT vocab_size 10^12", BertBackbone, {**BERT_CONFIG, "vocab_size": 10**12}, {},
     ["config.json", "`vocab_size`=1000000000000", "`hidden_size`=8", "GiB"]),
    ("BERT hidden_size 3.5", BertBackbone, {**BERT_CONFIG, "hidden_size": 3.5}, {},
     ["`hidden_size` in", "config.json (kzoo's BertBackbone `hidden_dim`)",
      "positive int, got 3.5"]),
    ("BERT max_position_embeddings a string", BertBackbone,
     {**BERT_CONFIG, "max_position_embeddings": "512"}, {},
     ["`max_position_embeddings` in", "`max_sequence_length`", "got '512'"]),
    ("BERT type_vocab_size null", BertBackbone,
     {**BERT_CONFIG, "type_vocab_size": None}, {},
     ["`type_vocab_size` in", "`num_segments`", "got None"]),
    ("BERT hidden_dropout_prob a string", BertBackbone,
     {**BERT_CONFIG, "hidden_dropout_prob": "0.1"}, {},
     ["`hidden_dropout_prob` in", "config.json", "must be a number"]),
    ("BERT override named as passed", BertBackbone, BERT_CONFIG,
     {"num_layers": 10**6},
     ["`num_layers`=1000000", "at most 512"]),
    ("GPT-2 n_layer 10^6", GPTBackbone, {**GPT2_CONFIG, "n_layer": 10**6}, {},
     ["config.json", "`n_layer`=1000000 (kzoo's `num_layers`)", "at most 512"]),
    ("GPT-2 n_positions 10^12", GPTBackbone, {**GPT2_CONFIG, "n_positions": 10**12}, {},
     ["config.json", "`n_positions`=1000000000000", "GiB"]),
    ("GPT-2 n_embd negative", GPTBackbone, {**GPT2_CONFIG, "n_embd": -8}, {},
     ["`n_embd` in", "(kzoo's GPTBackbone `hidden_dim`)", "got -8"]),
    ("GPT-2 n_inner 2.5", GPTBackbone, {**GPT2_CONFIG, "n_inner": 2.5}, {},
     ["`n_inner` in", "`intermediate_dim`", "got 2.5"]),
    ("GPT-2 vocab_size a bool", GPTBackbone, {**GPT2_CONFIG, "vocab_size": True}, {},
     ["`vocab_size` in", "`vocabulary_size`", "got True"]),
    ("GPT-1 n_head 0", GPTBackbone,
     {**GPT2_CONFIG, "model_type": "openai-gpt", "n_head": 0}, {},
     ["`n_head` in", "`num_heads`", "got 0"]),
]


@pytest.mark.parametrize("case,backbone_cls,config,overrides,fragments",
                         HUGGING_FACE_CASES, ids=[c[0] for c in HUGGING_FACE_CASES])
def test_hugging_face_sizes_are_named_as_the_file_writes_them(
        tmp_path, case, backbone_cls, config, overrides, fragments):
    folder = _hugging_face_config(tmp_path / "hf", config)
    assert_refused_fast_and_clearly(
        case, lambda: backbone_cls.from_preset(str(folder), **overrides), fragments)


def test_the_hugging_face_configs_are_valid(tmp_path):
    """The cases above differ from these in the one field they name."""
    for name, (cls, config) in {"bert": (BertBackbone, BERT_CONFIG),
                                "gpt2": (GPTBackbone, GPT2_CONFIG)}.items():
        folder = _hugging_face_config(tmp_path / name, config)
        assert cls.from_preset(str(folder), load_weights=False).num_layers == 1


@pytest.fixture(scope="module")
def bpe_preset(tmp_path_factory):
    from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer, bytes_to_unicode

    symbols = list(bytes_to_unicode().values())
    vocabulary = {symbol: i for i, symbol in enumerate(symbols + ["Ġt", "Ġth"])}
    tokenizer = BytePairTokenizer(vocabulary, ["Ġ t", "Ġt h"])
    folder = tmp_path_factory.mktemp("hostile_bpe") / "tiny_bpe"
    tokenizer.save_to_preset(str(folder))
    return folder


def _append_merge(rule):
    def edit(folder):
        with open(folder / "assets/tokenizer/merges.txt", "a", encoding="utf-8") as f:
            f.write(rule + "\n")
    return edit


BPE_CASES = [
    ("merge of unknown symbols", _append_merge("qq zz"),
     ["merges.txt", "'qq zz'", "not in `vocabulary`", "Save the tokenizer"]),
    ("merge that is not a pair", _append_merge("a b c"),
     ["merges.txt", "'a b'", "Save the tokenizer"]),
    ("merges 100 MB line", _big_line("assets/tokenizer/merges.txt"),
     ["merges.txt", "line 2", "longer than"]),
    ("vocabulary.json invalid UTF-8",
     _write_bytes("assets/tokenizer/vocabulary.json", b'{"\xff": 0}'),
     ["assets/tokenizer", "utf-8", "Save the tokenizer"]),
]


@pytest.mark.parametrize("case,damage,fragments", BPE_CASES, ids=[c[0] for c in BPE_CASES])
def test_hostile_byte_pair_files_are_refused(bpe_preset, tmp_path, case, damage,
                                             fragments):
    from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer

    folder = tmp_path / "damaged"
    shutil.copytree(bpe_preset, folder)
    damage(folder)
    start = time.process_time()
    with pytest.raises(PresetError) as info:
        BytePairTokenizer.from_preset(str(folder))
    assert time.process_time() - start < SECONDS
    for fragment in fragments:
        assert fragment in str(info.value), f"{case}: {fragment!r} not in {info.value}"
    BytePairTokenizer.from_preset(str(bpe_preset))  # the undamaged one loads


@pytest.fixture(scope="module")
def lambda_model_file(tmp_path_factory):
    import keras

    model = keras.Sequential([keras.Input((2,)), keras.layers.Lambda(lambda x: x * 2)])
    path = tmp_path_factory.mktemp("lambda") / "model.keras"
    model.save(str(path))
    return path


def test_keras_file_with_a_lambda_is_no_preset(lambda_model_file):
    with pytest.raises(PresetError, match="no converter reads"):
        BertBackbone.from_preset(str(lambda_model_file))


def test_export_refuses_a_keras_file_with_a_lambda(lambda_model_file, tmp_path):
    """The export's subprocess rebuilds a model from a ``.keras`` copy in
    safe mode: saved Python code is never run."""
    import importlib

    export_module = importlib.import_module("kzoo.export.saved_model")
    with pytest.raises(ValueError, match="safe_mode"):
        export_module.main(["keras:Sequential", str(lambda_model_file),
                          str(tmp_path / "exported")])
    assert not (tmp_path / "exported").exists()
