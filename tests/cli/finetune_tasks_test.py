"""`kzoo finetune --task ...` for every task shape, then `kzoo evaluate`'s scores."""

import csv
import json
import random
import re

import pytest

from kzoo import cli

NAMES = ["ada", "bob", "cleo", "dan"]
PLACES = ["paris", "rome", "oslo", "lima"]


def _tagged(path, count=24, seed=0):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(count):
            f.write(f"{rng.choice(NAMES)} B-PER\nvisits O\n{rng.choice(PLACES)} B-LOC\n"
                    f"with O\n{rng.choice(NAMES)} B-PER\n\n")
    return str(path)


def _squad(path, count=16, seed=0):
    rng = random.Random(seed)
    paragraphs = []
    for i in range(count):
        name, place = rng.choice(NAMES), rng.choice(PLACES)
        context = f"the king of {place} is {name} . the queen sees a river ."
        paragraphs.append({"context": context, "qas": [{
            "id": str(i), "question": f"who is the king of {place} ?",
            "answers": [{"text": name, "answer_start": context.index(f" {name} ") + 1}]}]})
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


def _choices(path, count=16, seed=0):
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["context", "ending0", "ending1", "label"])
        for _ in range(count):
            label = rng.randrange(2)
            endings = ["a good film", "a bad one"] if label == 0 else ["a bad one",
                                                                       "a good film"]
            writer.writerow(["the critic liked it :", *endings, label])
    return str(path)


def _scored(path, count=24, seed=0):
    rng = random.Random(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(["text", "text_pair", "label"])
        for _ in range(count):
            a, b = rng.choice(NAMES), rng.choice(NAMES)
            writer.writerow([f"{a} sees the river", f"{b} sees the river",
                             5.0 if a == b else 1.0])
    return str(path)


CASES = {
    "regress": (_scored, "sts.tsv", r"Pearson (-?[\d.]+|nan), Spearman"),
    "tag": (_tagged, "ner.conll", r"entity precision [\d.]+, recall [\d.]+, F1 ([\d.]+)"),
    "answer": (_squad, "squad.json", r"exact match [\d.]+, F1 ([\d.]+)"),
    "choose": (_choices, "swag.csv", r"accuracy ([\d.]+) \(16 questions\)"),
}


@pytest.mark.parametrize("task", sorted(CASES))
def test_finetune_and_evaluate(task, pretrained, tmp_path, capsys):
    write, name, score = CASES[task]
    data = write(tmp_path / name)
    bert = pretrained("bert")
    capsys.readouterr()
    output = str(tmp_path / task)
    assert cli.main(["finetune", "--model", bert, "--task", task, "--train", data,
                     "--output", output, "--epochs", "1", "--batch-size", "8",
                     "--sequence-length", "16", "--learning-rate", "1e-3"]) == 0
    assert "saved the preset" in capsys.readouterr().out
    assert cli.main(["evaluate", "--model", output, "--data", data]) == 0
    found = re.search(score, capsys.readouterr().out)
    assert found, f"no {task} score printed"


def test_tags_keep_their_names(pretrained, tmp_path, capsys):
    import kzoo

    data = _tagged(tmp_path / "ner.conll")
    output = str(tmp_path / "ner")
    assert cli.main(["finetune", "--model", pretrained("bert"), "--task", "tag",
                     "--train", data, "--output", output, "--epochs", "1",
                     "--sequence-length", "16"]) == 0
    assert "3 tags: O, B-LOC, B-PER" in capsys.readouterr().out
    model = kzoo.models.TokenClassifier.from_preset(output)
    assert model.label_names == ("O", "B-LOC", "B-PER")
    labels = model.predict_word_labels([["ada", "visits", "rome"]])
    assert len(labels[0]) == 3 and set(labels[0]) <= {"O", "B-LOC", "B-PER"}


def test_a_family_without_the_task_is_named(pretrained, tmp_path, capsys):
    data = _tagged(tmp_path / "ner.conll")
    assert cli.main(["finetune", "--model", pretrained("gpt"), "--task", "tag",
                     "--train", data, "--output", str(tmp_path / "x")]) == 2
    assert "GPT has no TokenClassifier; the families with one: BERT" in (
        capsys.readouterr().err)
