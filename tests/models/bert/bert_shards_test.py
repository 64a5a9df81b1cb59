"""BERT from token shards: the pairs and masks drawn on the fly follow
`BertPretrainerPreprocessor`'s rules and rates."""

import numpy as np
import pytest

from kzoo.data import prepare
from kzoo.models.bert.bert_pretraining import build_pretrainer
from kzoo.models.bert.bert_shards import BertPairs
from kzoo.testing.corpus import write_corpus

pytestmark = pytest.mark.without_tensorflow

@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    # Paragraphs of sentences, a paragraph a line, as novels are.
    documents = write_corpus(folder / "corpus.txt", documents=40, sentences=(2, 7),
                             words=(3, 9))
    shards = prepare("bert", [str(folder / "corpus.txt")], folder / "data",
                     options={"vocabulary_size": 120}, verbose=False)
    return shards, documents


def _preprocessor(shards, **kwargs):
    return build_pretrainer(shards.tokenizer(), 24, num_layers=1, num_heads=1,
                            hidden_dim=8, **kwargs).preprocessor


def test_sentences_are_the_paragraphs_split(data):
    shards, documents = data
    tokenizer = shards.tokenizer()
    sentences = [s for d in documents for s in d]
    assert shards.num_documents == len(documents) and shards.num_units == len(sentences)
    for i in range(0, len(sentences), 7):
        np.testing.assert_array_equal(shards.unit(i), np.asarray(tokenizer(sentences[i])))


def test_next_sentence_pairs_unmasked(data):
    shards, documents = data
    pre = _preprocessor(shards)
    pre.random_next_rate = 0.0
    pre.mask_selection_rate = 0.0
    pre._build()
    tokenizer = shards.tokenizer()
    pairs = [(a, b) for d in documents for a, b in zip(d, d[1:])]
    stream = BertPairs(shards, pre, 5, epoch=0, seed=1, shard=(0, 1), shuffle=False)
    assert stream.num_examples == len(pairs)
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    for index in (0, 3, len(stream) - 1):
        x, y, w = stream[index]
        for row, (a, b) in zip(range(5), pairs[index * 5:index * 5 + 5]):
            ids_a = list(np.asarray(tokenizer(a)))
            ids_b = list(np.asarray(tokenizer(b)))
            while len(ids_a) + len(ids_b) > 21:  # round robin: the longer first
                (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
            expected = [cls] + ids_a + [sep] + ids_b + [sep]
            assert x["token_ids"][row].tolist() == expected + [0] * (24 - len(expected))
            assert x["segment_ids"][row].tolist()[:len(expected)] == (
                [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1))
        assert y["nsp_logits"].tolist() == [0] * 5
        assert w["mlm_logits"].sum() == 0


def test_random_next_sentences_come_from_other_documents(data):
    shards, _ = data
    pre = _preprocessor(shards)
    pre.random_next_rate = 1.0
    stream = BertPairs(shards, pre, 8, epoch=0, seed=2, shard=(0, 1))
    labels, random_rows = [], 0
    for index in range(len(stream)):
        rows = stream.rows(index)
        generator = __import__("kzoo").data.streams.batch_generator(2, 0, index)
        firsts = stream.examples[rows]
        # Redraw B as the batch does and check it is in another document.
        generator.random(len(firsts))
        for a in firsts.tolist():
            b = stream._random_other(a, generator)
            first, end = shards.document_bounds(a)
            assert not first <= b < end
            random_rows += 1
        labels += stream[index][1]["nsp_logits"].tolist()
    assert labels == [1] * random_rows


def test_rates_of_next_sentences_and_masks(data):
    shards, _ = data
    pre = _preprocessor(shards)
    tokenizer = shards.tokenizer()
    mask_id = tokenizer.token_to_id("[MASK]")
    labels, selected, selectable, as_mask = [], 0, 0, 0
    for epoch in range(6):
        stream = BertPairs(shards, pre, 8, epoch=epoch, seed=3, shard=(0, 1))
        for index in range(len(stream)):
            x, y, w = stream[index]
            labels += y["nsp_logits"].tolist()
            chosen = w["mlm_logits"] > 0
            selected += int(chosen.sum())
            selectable += int(x["padding_mask"].sum()) - 3 * len(x["padding_mask"])
            picked = np.take_along_axis(x["token_ids"], x["mask_positions"], 1)[chosen]
            as_mask += int((picked == mask_id).sum())
    n = len(labels)
    # Binomial bounds, 5 sigma.
    assert abs(np.mean(labels) - 0.5) < 5 * np.sqrt(0.25 / n)
    rate = selected / selectable
    assert abs(rate - 0.15) < 5 * np.sqrt(0.15 * 0.85 / selectable) + 0.01
    assert abs(as_mask / selected - 0.8) < 5 * np.sqrt(0.16 / selected)


def test_a_batch_depends_only_on_seed_epoch_and_index(data):
    shards, _ = data
    pre = _preprocessor(shards)
    a = BertPairs(shards, pre, 8, epoch=1, seed=4, shard=(0, 1))
    b = BertPairs(shards, pre, 8, epoch=1, seed=4, shard=(0, 1), start=2, read_ahead=0)
    for name in ("token_ids", "mask_positions", "segment_ids"):
        np.testing.assert_array_equal(a[3][0][name], b[1][0][name])
    np.testing.assert_array_equal(a[3][1]["nsp_logits"], b[1][1]["nsp_logits"])
    c = BertPairs(shards, pre, 8, epoch=2, seed=4, shard=(0, 1))
    assert not np.array_equal(a[3][0]["token_ids"], c[3][0]["token_ids"])
