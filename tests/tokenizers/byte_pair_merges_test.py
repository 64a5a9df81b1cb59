import collections
import json
import random
import time

import pytest
import regex
import tensorflow as tf
from transformers import GPT2Tokenizer

from kzoo.tokenizers.byte_pair_merges import compute_byte_pair_merges
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer

# OpenAI's GPT-2 encoder.py: the pre-tokenization regex and the byte map.
GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")


def openai_bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def reference_merges(texts, num_merges, min_frequency=2):
    """Brute-force BPE training: recount every pair before each merge."""
    byte_map = openai_bytes_to_unicode()
    words = collections.Counter(
        tuple(byte_map[b] for b in word.encode())
        for text in texts for word in GPT2_PATTERN.findall(text))
    merges = []
    while len(merges) < num_merges:
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < min_frequency:
            break
        merges.append(best)
        merged = collections.Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if word[i:i + 2] == best:
                    out.append(best[0] + best[1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    return [f"{a} {b}" for a, b in merges]


def _corpus(num_lines, seed=0, num_words=3000):
    rng = random.Random(seed)
    syllables = ["ka", "to", "ri", "mu", "sen", "la", "po", "ve", "ing", "er", "ly",
                 "un", "é", "東", "😀"] + list("bcdfghjklmnpqrstvwxyz")
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
             for _ in range(num_words)]
    # Frequent words first: a word at index i is drawn about 1/i of the time.
    return [" ".join(words[int(len(words) ** rng.random()) - 1]
                     for _ in range(rng.randint(3, 12)))
            + rng.choice([".", "!", "'s", "\n", "  ", " don't"])
            for _ in range(num_lines)]


def test_first_merges_by_hand():
    # Words "hug" x5, " hugs" x5, " pug" x5 (Ġ is the space byte). Pair counts:
    # u g 15, h u 10, Ġ h 5, g s 5, Ġ p 5, p u 5 -> merge "u g". Then h ug 10
    # -> "h ug". Then Ġ hug, hug s, Ġ p, p ug all 5: the smallest pair in
    # string order wins ("h" < "p" < "Ġ") -> "hug s", then "p ug".
    vocabulary, merges = compute_byte_pair_merges(
        ["hug hugs pug"] * 5, vocabulary_size=260, special_tokens=())
    assert merges == ["u g", "h ug", "hug s", "p ug"]
    assert [vocabulary[t] for t in ("ug", "hug", "hugs", "pug")] == [256, 257, 258, 259]


def test_matches_brute_force_reference():
    corpus = _corpus(150)
    _, merges = compute_byte_pair_merges(corpus, vocabulary_size=256 + 1 + 150)
    assert merges == reference_merges(corpus, 150)


def test_trained_files_match_gpt2_tokenizer(tmp_path):
    corpus = _corpus(300, seed=1)
    vocabulary_file = str(tmp_path / "vocab.json")
    merges_file = str(tmp_path / "merges.txt")
    vocabulary, merges = compute_byte_pair_merges(
        corpus, vocabulary_size=600, vocabulary_output_file=vocabulary_file,
        merges_output_file=merges_file)
    assert len(vocabulary) == 600
    assert vocabulary["<|endoftext|>"] == 0 and vocabulary["!"] == 1 + ord("!")
    assert json.load(open(vocabulary_file, encoding="utf-8")) == vocabulary
    reference = GPT2Tokenizer(vocab=vocabulary_file, merges=merges_file)
    tokenizer = BytePairTokenizer(vocabulary_file, merges_file,
                                  unsplittable_tokens=("<|endoftext|>",))
    texts = corpus[:50] + _corpus(50, seed=2) + [
        "Don't  stop\n\n  now!", "<|endoftext|>kari 東京", "  😀 é\t"]
    outputs = tokenizer(tf.constant(texts))
    for text, ids in zip(texts, outputs):
        assert ids == reference(text)["input_ids"], repr(text)
    assert tokenizer.detokenize(outputs) == texts


def test_min_frequency_and_special_tokens():
    vocabulary, merges = compute_byte_pair_merges(
        ["ab ab ab ab cd <|x|> <|x|>"], vocabulary_size=1000, min_frequency=3,
        special_tokens=("<|x|>", "<|y|>"))
    # "a b" occurs 4 times, then "Ġ ab" 3 times; "c d" once. <|x|> is cut out.
    assert merges == ["a b", "Ġ ab"]
    assert list(vocabulary)[:2] == ["<|x|>", "<|y|>"]
    assert len(vocabulary) == 2 + 256 + 2


def test_dataset_and_file_inputs(tmp_path):
    corpus = _corpus(100, seed=3)
    expected = compute_byte_pair_merges(corpus, vocabulary_size=400)
    dataset = tf.data.Dataset.from_tensor_slices(corpus)
    assert compute_byte_pair_merges(dataset.batch(16), vocabulary_size=400) == expected
    path = tmp_path / "corpus.txt"
    path.write_text("".join(t + "\n" for t in ["hug hugs pug"] * 5), encoding="utf-8")
    _, merges = compute_byte_pair_merges(str(path), vocabulary_size=260)
    assert merges[:2] == ["u g", "h ug"]


def test_errors():
    with pytest.raises(ValueError, match="at least 257"):
        compute_byte_pair_merges(["a"], vocabulary_size=100)
    with pytest.raises(TypeError, match="`vocabulary_size`"):
        compute_byte_pair_merges(["a"], vocabulary_size="300")
    with pytest.raises(TypeError, match="`data`"):
        compute_byte_pair_merges(3, vocabulary_size=300)


@pytest.mark.large
def test_one_megabyte_corpus_trains_in_seconds():
    corpus = _corpus(30_000, seed=4, num_words=20_000)
    assert sum(len(t.encode()) for t in corpus) > 1_000_000
    start = time.process_time()  # CPU time: the machine may be shared
    vocabulary, merges = compute_byte_pair_merges(corpus, vocabulary_size=5257)
    assert len(merges) == 5000 and len(vocabulary) == 5257
    assert time.process_time() - start < 60
