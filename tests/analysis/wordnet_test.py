"""Reading WordNet's usage examples from its database files."""

import os

import pytest

from kzoo.analysis.wordnet import (
    SenseExample,
    WordNetNotFoundError,
    base_forms,
    read_wordnet_examples,
)

# Lines in WordNet 3.0's data-file format: offset, lexicographer file number
# (supersense), part of speech, word count (hex), words with lexical ids,
# pointer count, pointers, then "| gloss; examples".
DATA_NOUN = """\
  1 This software and database is provided "as is" (license header)
08420278 14 n 02 bank 0 banking_company 0 000 | a financial institution; "he cashed a check at the bank"; "the banks raised rates"; "bank after bank"
09213565 17 n 02 bank 0 river_bank 0 000 | sloping land; "they pulled the canoe up on the bank"; "a riverbank stroll"
04139859 06 n 01 mouse 0 000 | a hand-operated device; "two mice on the desk"
"""
DATA_VERB = """\
02343392 40 v 01 bank 0 000 01 + 08420278 n 0101 | do business with a bank; "we bank with that bank"; "she banked the money"
"""
DATA_ADJ = """\
00001740 00 a 01 able(a) 0 000 | having the means; "able to swim"
"""
NOUN_EXC = "mice mouse\n"


@pytest.fixture
def wordnet(tmp_path):
    (tmp_path / "data.noun").write_text(DATA_NOUN)
    (tmp_path / "data.verb").write_text(DATA_VERB)
    (tmp_path / "data.adj").write_text(DATA_ADJ)
    (tmp_path / "data.adv").write_text("")
    (tmp_path / "noun.exc").write_text(NOUN_EXC)
    return str(tmp_path)


def test_examples_tagged_with_sense_and_span(wordnet):
    examples = read_wordnet_examples(wordnet)
    assert examples == [
        SenseExample("bank", "n", "n:08420278", "noun.group",
                     "he cashed a check at the bank", 25, 29),
        SenseExample("bank", "n", "n:08420278", "noun.group",
                     "the banks raised rates", 4, 9),
        SenseExample("bank", "n", "n:09213565", "noun.object",
                     "they pulled the canoe up on the bank", 32, 36),
        SenseExample("mouse", "n", "n:04139859", "noun.artifact",
                     "two mice on the desk", 4, 8),
        SenseExample("bank", "v", "v:02343392", "verb.possession",
                     "she banked the money", 4, 10),
        SenseExample("able", "a", "a:00001740", "adj.all", "able to swim", 0, 4),
    ]
    # Left out: "bank after bank" and "we bank with that bank" (two targets),
    # "a riverbank stroll" (not a whole word), river_bank (multi-word lemma).


def test_parts_of_speech_subset(wordnet):
    assert {e.pos for e in read_wordnet_examples(wordnet, parts_of_speech="v")} == {"v"}
    with pytest.raises(ValueError, match="among 'nvar'"):
        read_wordnet_examples(wordnet, parts_of_speech="x")


def test_missing_wordnet_gives_the_install_command(tmp_path):
    with pytest.raises(WordNetNotFoundError,
                       match=r"No WordNet database in .*apt-get install -y wordnet-base"):
        read_wordnet_examples(str(tmp_path))


def test_base_forms_follow_morphy():
    assert base_forms("Churches", "n", {}) >= {"church"}
    assert "carry" in base_forms("carries", "v", {})
    assert "make" in base_forms("making", "v", {})
    assert "big" in base_forms("biggest", "a", {"biggest": ["big"]})
    assert base_forms("quickly", "r", {}) == {"quickly"}


@pytest.mark.skipif(not os.path.exists("/usr/share/wordnet/data.noun"),
                    reason="WordNet 3.0 is not installed: apt-get install -y wordnet-base")
def test_real_wordnet():
    examples = read_wordnet_examples(parts_of_speech="n")
    bank = [e for e in examples if e.lemma == "bank" and e.synset == "n:08420278"]
    assert [e.sentence for e in bank] == ["he cashed a check at the bank",
                                          "that bank holds the mortgage on my home"]
    assert {e.supersense for e in bank} == {"noun.group"}
    assert all(e.sentence[e.start:e.end].lower().startswith("bank") for e in bank)
    assert 10000 < len(examples) < 11000  # 10,264 noun examples with one target
