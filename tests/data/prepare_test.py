"""`kzoo.data.prepare` and `TokenShards`: what is written, what is refused,
and what a failure leaves behind."""

import errno
import json
import os

import numpy as np
import pytest

from kzoo.data import CorpusError, ShardError, TokenShards, check_corpus_unchanged, prepare
from kzoo.data import shards as shards_module
from kzoo.models.gpt.gpt_pretraining import token_blocks
from kzoo.testing.corpus import write_corpus
from kzoo.training import read_documents

pytestmark = pytest.mark.without_tensorflow

@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    write_corpus(path)
    return str(path)


def test_gpt_shards_hold_the_in_memory_token_stream(tmp_path, corpus):
    shards = prepare("gpt", [corpus], tmp_path / "data",
                     options={"vocabulary_size": 300}, shard_tokens=500,
                     verbose=False)
    assert len(shards.manifest["shards"]) > 2  # documents spread over shards
    assert shards.dtype == np.uint16 and shards.family == "gpt"
    tokenizer = shards.tokenizer()
    articles = ["\n".join(d) for d in read_documents([corpus])]
    blocks, count = token_blocks(tokenizer, articles, 8)
    stream = shards.tokens(0, shards.num_tokens)
    assert count == shards.num_tokens
    # The whole stream, read across shard boundaries, is the in-memory one.
    np.testing.assert_array_equal(stream[:len(blocks) * 8 + 1].astype(np.int64),
                                  np.concatenate([blocks[:, :-1].ravel(),
                                                  blocks[-1:, -1]]))
    for start in range(0, shards.num_tokens - 20, 97):
        np.testing.assert_array_equal(shards.tokens(start, start + 20),
                                      stream[start:start + 20])
    assert shards.num_documents == len(articles)
    assert shards.num_units == sum(len(d) for d in read_documents([corpus]))


def test_manifest_records_the_corpus_and_sizes(tmp_path, corpus):
    shards = prepare("gpt", [corpus], tmp_path / "data",
                     options={"vocabulary_size": 300}, verbose=False)
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert manifest["corpus"][0]["path"] == os.path.abspath(corpus)
    assert manifest["corpus"][0]["bytes"] == os.path.getsize(corpus)
    assert manifest["vocabulary_size"] == shards.tokenizer().vocabulary_size() == 300
    assert manifest["options"] == {"vocabulary_size": 300}
    assert manifest["num_tokens"] == sum(s["num_tokens"] for s in manifest["shards"])


def test_an_up_to_date_folder_is_kept_and_a_changed_corpus_refused(tmp_path, corpus):
    out = tmp_path / "data"
    prepare("gpt", [corpus], out, options={"vocabulary_size": 300}, verbose=False)
    stamp = os.stat(out / "manifest.json").st_mtime_ns
    prepare("gpt", [corpus], out, options={"vocabulary_size": 300}, verbose=False)
    assert os.stat(out / "manifest.json").st_mtime_ns == stamp
    with open(corpus, "a") as f:
        f.write("More text.\n")
    with pytest.raises(ShardError, match=f"{corpus}.*bytes then"):
        check_corpus_unchanged(TokenShards(out))
    # Preparing again replaces the folder.
    prepare("gpt", [corpus], out, options={"vocabulary_size": 300}, verbose=False)
    check_corpus_unchanged(TokenShards(out))


def test_a_full_disk_leaves_no_partial_output_and_the_earlier_one_whole(
        tmp_path, corpus, monkeypatch):
    out = tmp_path / "data"
    prepare("gpt", [corpus], out, options={"vocabulary_size": 300}, verbose=False)
    before = {p: (out / p).read_bytes() for p in os.listdir(out) if (out / p).is_file()}
    calls = []

    def full(self, units):
        calls.append(1)
        if len(calls) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_add(self, units)

    real_add = shards_module.ShardWriter.add
    monkeypatch.setattr(shards_module.ShardWriter, "add", full)
    with pytest.raises(OSError, match="No space"):
        prepare("gpt", [corpus], out, options={"vocabulary_size": 280}, verbose=False)
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "data"]
    after = {p: (out / p).read_bytes() for p in os.listdir(out) if (out / p).is_file()}
    assert after == before
    assert TokenShards(out).tokenizer().vocabulary_size() == 300


def test_shards_cut_short_or_from_another_version_are_named(tmp_path, corpus):
    out = tmp_path / "data"
    prepare("gpt", [corpus], out, options={"vocabulary_size": 300}, verbose=False)
    tokens = out / "shard-00000.tokens"
    data = tokens.read_bytes()
    tokens.write_bytes(data[:-10])
    with pytest.raises(ShardError, match=f"{tokens}.*cut short"):
        TokenShards(out)
    tokens.write_bytes(data)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "kzoo_version": "0.0.1"}))
    with pytest.raises(ShardError, match="kzoo 0.0.1.*Prepare the corpus again"):
        TokenShards(out)
    with pytest.raises(ShardError, match="no manifest.json"):
        TokenShards(tmp_path)


def test_corpora_without_training_text_are_refused(tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n  \n")
    with pytest.raises(CorpusError, match="no text"):
        prepare("gpt", [str(blank)], tmp_path / "a", verbose=False)
    single = tmp_path / "single.txt"
    single.write_text("One sentence only.\n\nAnother lone one.\n")
    with pytest.raises(CorpusError, match="two or more sentences"):
        prepare("bert", [str(single)], tmp_path / "b", verbose=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a prepared folder"):
        prepare("gpt", [str(single)], other, verbose=False)


def test_the_vocabulary_comes_from_an_even_sample(tmp_path):
    path = tmp_path / "corpus.txt"
    with open(path, "w") as f:
        for i in range(400):
            f.write(f"Document number{i} has words.\n\n")
    shards = prepare("gpt", [str(path)], tmp_path / "data",
                     options={"vocabulary_size": 400},
                     vocabulary_sample_mb=os.path.getsize(path) / 4e6, verbose=False)
    assert shards.manifest["vocabulary_sample"] == {"stride": 4}
    # Every document is still tokenized.
    assert shards.num_documents == 400


def test_a_gzip_corpus_gives_the_shards_of_its_text(tmp_path, corpus):
    import gzip

    packed = tmp_path / "corpus.txt.gz"
    packed.write_bytes(gzip.compress(open(corpus, "rb").read()))
    plain = prepare("gpt", [corpus], tmp_path / "plain", options={"vocabulary_size": 300},
                    verbose=False)
    zipped = prepare("gpt", [str(packed)], tmp_path / "zipped",
                     options={"vocabulary_size": 300}, verbose=False)
    np.testing.assert_array_equal(plain.tokens(0, plain.num_tokens),
                                  zipped.tokens(0, zipped.num_tokens))
    assert zipped.manifest["corpus"][0]["bytes"] == os.path.getsize(packed)
