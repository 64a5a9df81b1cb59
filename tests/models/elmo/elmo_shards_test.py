"""ELMo from token shards: the prepared sentences (UTF-8 bytes), the softmax
vocabulary, the batches ``ElmoSentences`` makes, and ``kzoo pretrain elmo
--data``."""

import os
import types

import keras
import numpy as np
import pytest

import kzoo.data
from kzoo import cli
from kzoo.models.elmo import elmo_pretraining
from kzoo.models.elmo.elmo_shards import ElmoSentences, from_shards
from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs
from kzoo.testing import assert_all_equal

# Two documents (a blank line between them). A sentence ends at ". ", "? "
# or "! " before a capital (or digit, or opening quote); those under 3 words
# are dropped, runs of blank space become one space.
CORPUS = (
    "The river bank is wide. Too short. A   big  dog sees the old river bank today!\n"
    "Café au lait in 日本 is good. Yes sir.\n"
    "\n"
    "Where is the money now? The bank holds the money.\n"
    "Go home. the cat likes the small dog\n"
)
SENTENCES = [
    "The river bank is wide.",
    "A big dog sees the old river bank today!",
    "Café au lait in 日本 is good.",
    "Where is the money now?",
    "The bank holds the money.",
    "Go home. the cat likes the small dog",  # no split before a lowercase word
]
SEQUENCE_LENGTH = 6  # <S>, 4 words, </S>
TINY = ["--num-layers", "1", "--hidden-dim", "8", "--projection-dim", "4",
        "--batch-size", "2", "--sequence-length", str(SEQUENCE_LENGTH)]


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    folder = tmp_path_factory.mktemp("elmo_shards")
    path = folder / "corpus.txt"
    path.write_text(CORPUS, encoding="utf-8")
    return kzoo.data.prepare("elmo", [path], folder / "data",
                             options={"vocabulary_size": 50}, verbose=False)


def _options(**overrides):
    values = dict(sequence_length=SEQUENCE_LENGTH, num_layers=1, hidden_dim=8,
                  projection_dim=4, dropout=0.0, learning_rate=1e-3, seed=3,
                  batch_size=2)
    values.update(overrides)
    return types.SimpleNamespace(**values)


def _cut(sentence):
    return " ".join(sentence.split()[:SEQUENCE_LENGTH - 2])


def test_units_are_the_sentences_as_utf8_bytes(shards):
    assert shards.manifest["dtype"] == "uint8"
    assert shards.manifest["units"] == "sentences"
    assert (shards.num_units, shards.num_documents) == (len(SENTENCES), 2)
    units = [shards.unit(i) for i in range(shards.num_units)]
    assert all(u.dtype == np.uint8 for u in units)
    assert [u.tobytes() for u in units] == [s.encode("utf-8") for s in SENTENCES]
    assert units[2].tobytes().decode("utf-8").split()[0] == "Café"
    assert "日本" in units[2].tobytes().decode("utf-8").split()


def test_vocabulary_is_learned_from_the_sentences(shards):
    expected = elmo_pretraining.train_tokenizer(SENTENCES, 50)
    tokenizer = shards.tokenizer()
    assert tokenizer.get_vocabulary() == expected.get_vocabulary()
    assert tokenizer.get_vocabulary()[:3] == ["<UNK>", "<S>", "</S>"]
    assert "日本" in tokenizer.get_vocabulary()


def test_batch_is_the_preprocessor_on_the_cut_sentences(shards):
    model, data = from_shards(shards, _options())
    batches = data["batches_for_epoch"](0)
    assert isinstance(batches, ElmoSentences) and len(batches) == 3
    for index in range(len(batches)):
        rows = batches.rows(index)
        sentences = [_cut(SENTENCES[i]) for i in rows]
        assert batches.sentences(rows) == sentences
        with engine_scope("python"), numpy_outputs():
            expected = model.preprocessor(sentences)
        got = batches[index]
        assert keras.tree.flatten(got)[0].dtype == np.int32
        keras.tree.map_structure(assert_all_equal, got, expected)


def test_same_seed_epoch_and_index_give_the_same_batch(shards):
    model, data = from_shards(shards, _options())
    first = data["batches_for_epoch"](0)[1]
    again = data["batches_for_epoch"](0)[1]
    resumed = data["batches_for_epoch"](0, 1)[0]  # a run resumed at batch 1
    keras.tree.map_structure(assert_all_equal, first, again)
    keras.tree.map_structure(assert_all_equal, first, resumed)
    epoch0 = data["batches_for_epoch"](0).order()
    epoch1 = data["batches_for_epoch"](1).order()
    assert sorted(epoch0.tolist()) == sorted(epoch1.tolist()) == list(range(6))
    assert epoch0.tolist() != epoch1.tolist()


def test_pretrain_from_data_writes_a_preset(shards, tmp_path, capsys):
    output = str(tmp_path / "elmo")
    assert cli.main(["pretrain", "elmo", "--data", shards.directory, "--output",
                     output, "--epochs", "1", *TINY]) == 0
    out = capsys.readouterr().out
    assert f"{shards.num_units:,} sentences" in out
    assert os.path.exists(os.path.join(output, "config.json"))
    assert os.path.exists(os.path.join(output, "model.weights.h5"))
    from kzoo.models import ElmoLanguageModel

    model = ElmoLanguageModel.from_preset(output)
    assert (model.preprocessor.tokenizer.get_vocabulary()
            == shards.tokenizer().get_vocabulary())
    assert model.preprocessor.sequence_length == SEQUENCE_LENGTH
