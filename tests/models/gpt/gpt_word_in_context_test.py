"""GPT word-in-context vectors against transformers, and left context only.

The reference is independent: transformers' ``GPT2Model`` /
``OpenAIGPTModel`` run on the whole sentence with ``output_hidden_states``
(torch), the word's last piece chosen by transformers' own tokenizer (its
character offsets for GPT-2, its ``</w>`` word ends for GPT-1). kzoo cuts the
sentence after the word and reads its own backbone.
"""

import json

import numpy as np
import pytest

import kzoo
from kzoo.analysis import load_word_in_context, pair_cosines, word_in_context
from kzoo.analysis.targets import find_word
from kzoo.analysis.word_in_context import cosine
from kzoo.analysis.word_in_context_pairs import WordInContextPair
from kzoo.analysis.wordnet import SenseExample
from kzoo.models.gpt.gpt_word_in_context import GPTWordInContext
from kzoo.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CORPUS = ["the bank of the river", "she borrowed money from the bank",
          "we saw a play at the theatre", "they play chess by the river",
          "(etc.) (etc.)"] * 3
VOCABULARY, MERGES = kzoo.tokenizers.compute_byte_pair_merges(CORPUS, vocabulary_size=290)
SENTENCES = [  # (sentence, word, index)
    ("the bank of the river", "bank", None),
    ("A café by the unaffable bank.", "unaffable", None),  # é: 2 bytes; 3+ pieces
    ("the bank lends money, the bank", "bank", 1),
    ("Play", "Play", None),  # the first piece: no left context
    ("he played music by the river bank", "played", None),
    ("we play chess (etc.) at noon", "etc.", None),  # ".)" is one piece
]


def _perturb(model):
    """Random weights far from the initializer's (layer norms included)."""
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return model


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_gpt2")
    eos = VOCABULARY["<|endoftext|>"]
    config = transformers.GPT2Config(
        vocab_size=len(VOCABULARY), n_positions=32, n_embd=16, n_layer=2, n_head=2,
        bos_token_id=eos, eos_token_id=eos)
    torch.manual_seed(0)
    _perturb(transformers.GPT2Model(config)).eval().save_pretrained(folder)
    with open(folder / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(VOCABULARY, f)
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n",
                                       encoding="utf-8")
    return folder


def _gpt2_reference(folder, sentences, spans):
    """[n, layers, dim]: transformers' hidden states of the whole sentence at
    the last token whose character offsets overlap the span."""
    model = transformers.GPT2Model.from_pretrained(str(folder)).eval()
    tokenizer = transformers.GPT2TokenizerFast(str(folder / "vocab.json"),
                                               str(folder / "merges.txt"))
    out, pieces = [], []
    for sentence, (start, end) in zip(sentences, spans):
        encoded = tokenizer(sentence, return_offsets_mapping=True, return_tensors="pt")
        offsets = encoded.pop("offset_mapping")[0].tolist()
        hits = [i for i, (s, e) in enumerate(offsets) if s < end and e > start]
        with torch.no_grad():
            hidden = model(**encoded, output_hidden_states=True).hidden_states
        out.append(np.stack([h[0, hits[-1]].numpy() for h in hidden]))
        pieces.append(len(hits))
    return np.stack(out), pieces


def test_gpt2_matches_transformers_hidden_states(gpt2_folder):
    wic = load_word_in_context(str(gpt2_folder))
    assert isinstance(wic, GPTWordInContext)
    assert wic.layer_names == ("embeddings", "layer 1", "layer 2")
    sentences = [s for s, _, _ in SENTENCES]
    spans = [find_word(s, w, i) for s, w, i in SENTENCES]
    wic.batch_size = 4  # two batches, padded to different lengths
    ours = wic.vectors_at(sentences, spans)
    theirs, pieces = _gpt2_reference(gpt2_folder, sentences, spans)
    assert max(pieces) >= 3  # a word of several pieces: its last one is read
    assert ours.shape == theirs.shape == (len(SENTENCES), 3, 16)
    np.testing.assert_allclose(ours, theirs, atol=1e-4, rtol=0)
    # The last layer is transformers' last hidden state: after ln_f, which
    # the blocks' raw output is not.
    backbone = wic.backbone
    ids = np.array([[VOCABULARY["the"], VOCABULARY["Ġbank"]]], "int32")
    sequence_output = to_numpy(backbone({"token_ids": ids,
                                         "padding_mask": np.ones_like(ids)})
                               ["sequence_output"])
    np.testing.assert_allclose(wic.word_vectors("the bank", "bank")[-1],
                               sequence_output[0, -1], atol=1e-5, rtol=0)


def test_gpt2_pair_cosines_match_transformers(gpt2_folder):
    wic = load_word_in_context(str(gpt2_folder))

    def example(sentence, word, index=None):
        start, end = find_word(sentence, word, index)
        return SenseExample(sentence=sentence, start=start, end=end, lemma=word.lower(),
                            pos="n", synset="x", supersense="noun.x")

    pairs = [WordInContextPair(example(*SENTENCES[0]), example(*SENTENCES[2]), 1),
             WordInContextPair(example(*SENTENCES[0]), example(SENTENCES[5][0], "chess"), 0)]
    ours = pair_cosines(wic, pairs)
    targets = [(e.sentence, (e.start, e.end)) for p in pairs for e in (p.first, p.second)]
    vectors, _ = _gpt2_reference(gpt2_folder, [t[0] for t in targets],
                                 [t[1] for t in targets])
    np.testing.assert_allclose(ours, cosine(vectors[0::2], vectors[1::2]),
                               atol=1e-4, rtol=0)


def test_left_context_only(gpt2_folder):
    wic = load_word_in_context(str(gpt2_folder))
    # The text after the word changes: the vectors do not, at any layer (a
    # bidirectional model's would, from the first block on).
    river = wic.word_vectors("the bank of the river", "bank")
    money = wic.word_vectors("the bank lends money to us", "bank")
    np.testing.assert_allclose(river, money, atol=1e-6, rtol=0)
    # The text before it changes: every block's vector changes, the
    # embeddings do not (same piece, same position).
    other = wic.word_vectors("a bank of the river", "bank")
    sims = cosine(river, other)
    assert sims[0] == pytest.approx(1.0, abs=1e-6) and (sims[1:] < 1 - 1e-4).all()
    # And it is so in transformers too, on the whole sentences.
    sentences = ["the bank of the river", "the bank lends money to us"]
    theirs, _ = _gpt2_reference(gpt2_folder, sentences,
                                [find_word(s, "bank") for s in sentences])
    np.testing.assert_allclose(theirs[0], theirs[1], atol=1e-5, rtol=0)
    np.testing.assert_allclose(river, theirs[0], atol=1e-4, rtol=0)


def test_from_a_task_and_errors(gpt2_folder):
    lm = kzoo.models.GPTCausalLM.from_preset(str(gpt2_folder))
    wic = word_in_context(lm)
    assert isinstance(wic, GPTWordInContext) and wic.num_layers == 3
    np.testing.assert_allclose(
        wic.word_vectors("the river bank", "bank"),
        load_word_in_context(str(gpt2_folder)).word_vectors("the river bank", "bank"),
        atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="Pass the model's `tokenizer`"):
        word_in_context(lm.backbone)
    with pytest.raises(ValueError, match="pads its output to sequence_length=8"):
        GPTWordInContext(lm.backbone, kzoo.models.GPTTokenizer(
            VOCABULARY, MERGES, sequence_length=8))
    # Only the text before the word counts against the context length.
    long_tail = "the bank " + "of the river " * 40
    assert wic.word_vectors(long_tail, "bank").shape == (3, 16)
    with pytest.raises(ValueError, match="pieces up to its target; the model takes 32"):
        wic.word_vectors("of the river " * 20 + "bank", "bank")
    with pytest.raises(ValueError, match="'bank' is not in the sentence 'the river'"):
        wic.similarity("bank", "the river", "a bank")
    with pytest.raises(ValueError, match="not valid Unicode text"):
        wic.word_vectors("the bank \ud800", "bank")


GPT1_CORPUS = ["the bank of the river .", "she borrowed money from the bank",
               "we saw a play at the theatre", "unaffable"] * 5


@pytest.fixture(scope="module")
def gpt1_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_openai_gpt")
    bpe = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>",
                                                     end_of_word_suffix="</w>"))
    bpe.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    bpe.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    bpe.train_from_iterator(GPT1_CORPUS, tokenizers.trainers.BpeTrainer(
        vocab_size=60, special_tokens=["<unk>"], end_of_word_suffix="</w>"))
    bpe.model.save(str(folder))
    config = transformers.OpenAIGPTConfig(vocab_size=bpe.get_vocab_size(),
                                          n_positions=24, n_embd=16, n_layer=2, n_head=2)
    torch.manual_seed(0)
    _perturb(transformers.OpenAIGPTModel(config)).eval().save_pretrained(folder)
    return folder


def test_gpt1_matches_transformers_hidden_states(gpt1_folder):
    wic = load_word_in_context(str(gpt1_folder))
    assert wic.backbone.normalize_first is False
    sentences = [("The Bank of the river.", "Bank", 1), ("the unaffable bank", "unaffable", 1),
                 ("She borrowed money", "money", 2)]
    ours = wic.vectors_at([s for s, _, _ in sentences],
                          [find_word(s, w) for s, w, _ in sentences])
    model = transformers.OpenAIGPTModel.from_pretrained(str(gpt1_folder)).eval()
    tokenizer = transformers.OpenAIGPTTokenizer.from_pretrained(str(gpt1_folder))
    theirs, longest = [], 0
    for sentence, _, word_index in sentences:
        ids = tokenizer(sentence, add_special_tokens=False)["input_ids"]
        tokens = tokenizer.convert_ids_to_tokens(ids)
        ends = [i for i, t in enumerate(tokens) if t.endswith("</w>")]
        last = ends[word_index]  # the piece that ends the word
        longest = max(longest, last - (ends[word_index - 1] if word_index else -1))
        with torch.no_grad():
            hidden = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        theirs.append(np.stack([h[0, last].numpy() for h in hidden]))
    assert longest >= 2  # "unaffable" is several pieces
    np.testing.assert_allclose(ours, np.stack(theirs), atol=1e-4, rtol=0)
