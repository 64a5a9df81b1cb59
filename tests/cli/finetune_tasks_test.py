"""`kzoo finetune --task ...` for every task shape, then `kzoo evaluate`'s
scores, each checked against the metric computed here from the saved
model's predictions by an independent implementation (scipy, seqeval,
torchmetrics' port of SQuAD's script, numpy)."""

import csv
import json
import math
import random
import re
import warnings

import numpy as np
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


def _read_tagged(path):
    sentences, words, tags = [], [], []
    for line in open(path, encoding="utf-8"):
        if line.strip():
            word, tag = line.split()
            words.append(word)
            tags.append(tag)
        elif words:
            sentences.append((words, tags))
            words, tags = [], []
    return [w for w, _ in sentences], [t for _, t in sentences]


def _regress_reference(model, data):
    stats = pytest.importorskip("scipy.stats")
    with open(data, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    x = ([r["text"] for r in rows], [r["text_pair"] for r in rows])
    predicted = np.asarray(model.predict(x, verbose=0), dtype=np.float64)[:, 0]
    labels = np.array([float(r["label"]) for r in rows])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant prediction: NaN
        return [stats.pearsonr(labels, predicted)[0], stats.spearmanr(labels, predicted)[0]]


def _tag_reference(model, data):
    seqeval = pytest.importorskip("seqeval.metrics")
    words, gold = _read_tagged(data)
    names = model.label_names
    guess = [[names[t] if t >= 0 else "O" for t in row]
             for row in model.predict_words(words)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval's default mode: conlleval's count
        return [seqeval.precision_score(gold, guess), seqeval.recall_score(gold, guess),
                seqeval.f1_score(gold, guess)]


def _answer_reference(model, data):
    squad = pytest.importorskip("torchmetrics.functional.text.squad")
    paragraphs = json.load(open(data))["data"][0]["paragraphs"]
    questions = [p["qas"][0]["question"] for p in paragraphs]
    found = model.answer(questions, [p["context"] for p in paragraphs])
    predictions = [{"prediction_text": a["text"], "id": str(i)} for i, a in enumerate(found)]
    targets = [{"answers": {"answer_start": [a["answer_start"] for a in p["qas"][0]["answers"]],
                            "text": [a["text"] for a in p["qas"][0]["answers"]]},
                "id": str(i)} for i, p in enumerate(paragraphs)]
    scores = squad.squad(predictions, targets)
    return [float(scores["exact_match"]), float(scores["f1"])]


def _choose_reference(model, data):
    with open(data, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    x = ([r["context"] for r in rows], [[r["ending0"], r["ending1"]] for r in rows])
    scores = np.asarray(model.predict(x, verbose=0))
    return [float(np.mean(scores.argmax(-1) == np.array([int(r["label"]) for r in rows])))]


# Each task: its data, the printed line (one group per score, at its printed
# precision) and the reference scores from the saved model's predictions.
NUMBER = r"(-?[\d.]+|nan)"
CASES = {
    "regress": (_scored, "sts.tsv", rf"Pearson {NUMBER}, Spearman {NUMBER}",
                _regress_reference),
    "tag": (_tagged, "ner.conll",
            rf"entity precision {NUMBER}, recall {NUMBER}, F1 {NUMBER} "
            r"\(conlleval's counting\)", _tag_reference),
    "answer": (_squad, "squad.json", rf"exact match {NUMBER}, F1 {NUMBER}",
               _answer_reference),
    "choose": (_choices, "swag.csv", rf"accuracy {NUMBER} \(16 questions\)",
               _choose_reference),
}


def assert_printed(printed, expected):
    """Each printed figure is the reference rounded as printed (NaN as nan)."""
    assert len(printed) == len(expected)
    for text, value in zip(printed, expected):
        if text == "nan":
            assert math.isnan(value), (printed, expected)
            continue
        decimals = len(text.split(".")[1]) if "." in text else 0
        assert abs(float(text) - value) <= 0.5 * 10**-decimals + 1e-9, (printed, expected)


@pytest.mark.parametrize("task", sorted(CASES))
def test_finetune_and_evaluate(task, pretrained, tmp_path, capsys):
    from kzoo.cli.finetune import task_shape

    write, name, score, reference = CASES[task]
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
    model = task_shape(task).from_preset(output)  # the saved model, as evaluate loads it
    expected = reference(model, data)
    assert_printed(found.groups(), expected)
    if task == "regress":  # as GLUE's STS-B: the same two correlations
        assert cli.main(["evaluate", "--model", output, "--data", data,
                         "--glue", "STS-B"]) == 0
        found = re.search(rf"GLUE stsb: Pearson {NUMBER}, Spearman {NUMBER} \(24 examples\)",
                          capsys.readouterr().out)
        assert found
        assert_printed(found.groups(), expected)


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
