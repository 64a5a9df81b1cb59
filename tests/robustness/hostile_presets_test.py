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
from kzoo.presets.errors import PresetError
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


@pytest.mark.parametrize("case,damage,load,fragments", CASES, ids=[c[0] for c in CASES])
def test_hostile_preset_is_refused_fast_and_clearly(preset, tmp_path, case, damage,
                                                    load, fragments):
    folder = tmp_path / "damaged"
    shutil.copytree(preset, folder)
    damage(folder)
    rss_before = _max_rss_bytes()
    start, cpu_start = time.perf_counter(), time.process_time()
    with pytest.raises(PresetError) as info:
        load(folder)
    elapsed = time.process_time() - cpu_start
    assert time.perf_counter() - start < WALL_SECONDS
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{case}: {fragment!r} not in {message!r}"
    assert elapsed < SECONDS, f"{case}: refused after {elapsed:.2f} s of CPU time"
    assert _max_rss_bytes() - rss_before < MAX_RSS_GROWTH_BYTES


def test_the_valid_preset_still_loads(preset):
    assert BertBackbone.from_preset(str(preset)).count_params() > 0


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
