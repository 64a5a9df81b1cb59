"""Sentence sentiment two ways: a classifier on frozen features (the
feature-based approach of the ELMo and BERT papers) and fine-tuning the
whole model where its family fine-tunes; both on the same stratified
splits (``sentiment_splits``) of the Pang & Lee sentences."""

import collections

import numpy as np

from kzoo.analysis.compare.probes_classifier import (
    cross_validated_accuracy,
    probe_accuracy,
)
from kzoo.analysis.compare.probes_statistics import spread
from kzoo.analysis.compare.probes_words import WORD, vectors_in_windows

CONCATENATED = "all layers"


def sentiment_splits(n, labels, seeds=5, test_fraction=0.2):
    """The same train / test splits for every model: for seed ``s``, each
    class's positions shuffled by ``numpy.random.default_rng(s)`` and the
    first ``round(test_fraction * class size)`` of them held out.

    Args:
        n: int. Number of sentences.
        labels: ``[n]`` class labels.
        seeds: int. Number of splits (seeds ``0 .. seeds - 1``).
        test_fraction: float in (0, 1).

    Returns:
        A list of ``{"seed", "train", "test"}`` (sorted position lists).

    Example:
    >>> split = sentiment_splits(10, [0] * 5 + [1] * 5, seeds=1)[0]
    >>> len(split["train"]), len(split["test"])
    (8, 2)
    """
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"`labels` has {labels.size} entries for n={n} sentences.")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"`test_fraction` must be in (0, 1), got {test_fraction!r}.")
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"`seeds` must be a positive int, got {seeds!r}.")
    splits = []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        test = []
        for label in np.unique(labels):
            members = rng.permutation(np.flatnonzero(labels == label))
            test += members[:round(test_fraction * len(members))].tolist()
        held = set(test)
        splits.append({"seed": seed, "train": [i for i in range(n) if i not in held],
                       "test": sorted(int(i) for i in test)})
    return splits


def check_splits(splits, sentences, labels):
    """Raises a ``ValueError`` unless ``labels`` has one label per sentence
    and each split's ``train`` and ``test`` are positions of them."""
    if len(sentences) != len(labels):
        raise ValueError(f"{len(sentences)} sentences but {len(labels)} labels: "
                         "pass one label per sentence.")
    if not splits:
        raise ValueError("No splits: make them with sentiment_splits(n, labels).")
    for split in splits:
        for part in ("train", "test"):
            positions = split.get(part) if isinstance(split, dict) else None
            if not positions or not all(
                    isinstance(i, (int, np.integer)) and 0 <= i < len(sentences)
                    for i in positions):
                raise ValueError(f"A split's {part!r} must be a non-empty list of "
                                 f"positions below {len(sentences)}: make the splits "
                                 "with sentiment_splits(n, labels).")


def sentence_features(wic, sentences, window=16):
    """Each sentence's feature vector per layer: the mean of its words'
    in-context vectors (``WordInContext.vectors_at``), each word seen in the
    sentence cut to ``window`` words on either side (fewer where the model
    takes no longer text: ``vectors_in_windows``). A word the model has no
    vector for (a static vocabulary) is left out of the mean; a sentence
    with none is the zero vector.

    Returns:
        ``(features, smallest window used)``: float64 features
        ``[len(sentences), num_layers, dim]``.
    """
    contexts, owner = [], []
    for i, sentence in enumerate(sentences):
        for m in WORD.finditer(sentence):
            contexts.append((sentence, m.span()))
            owner.append(i)
    if not contexts:
        raise ValueError("No sentence has a word: pass text sentences.")
    vectors, used = vectors_in_windows(wic, contexts, window)
    vectors = vectors.astype(np.float64)
    ok = ~np.isnan(vectors).any(axis=-1)
    sums = np.zeros((len(sentences),) + vectors.shape[1:])
    np.add.at(sums, np.array(owner), np.where(ok[..., None], vectors, 0.0))
    counts = np.zeros((len(sentences), vectors.shape[1]))
    np.add.at(counts, np.array(owner), ok)
    return sums / np.maximum(counts, 1.0)[..., None], used


def feature_probe(wic, sentences, labels, splits, C=1.0, folds=5, window=16,
                  concatenate=True):
    """A logistic-regression probe on each layer's frozen sentence features.

    For each split the candidate features (each layer, and with
    ``concatenate`` all layers side by side: a learned linear mix of the
    layers) are scored by ``folds``-fold cross-validation on the split's
    training part; the best (first on ties) is fitted on the whole training
    part and measured on the test part. The test part never chooses.

    Args:
        wic: a ``kzoo.analysis.WordInContext``.
        sentences, labels: the texts and their 0 / 1 labels.
        splits: ``sentiment_splits(...)``.
        C: float. The classifier's inverse L2 strength (standardised features).
        folds: int. Cross-validation folds on each training part.
        window: int. Words on either side of a word in its sentence
            (``sentence_features``).
        concatenate: bool. Also try all layers together (models with
            several layers).

    Returns:
        A JSON-ready dict: ``layer`` (the candidate chosen most often),
        ``layers_chosen`` (per split), ``accuracies`` (the chosen one's test
        accuracy per split), ``mean``, ``std`` (ddof=1), ``per_layer``
        (every candidate's ``cv_accuracies``, test ``accuracies``, ``mean``,
        ``std``) and the settings.
    """
    labels = np.asarray(labels)
    check_splits(splits, sentences, labels)
    features, used = sentence_features(wic, sentences, window)
    candidates = {name: features[:, i] for i, name in enumerate(wic.layer_names)}
    if concatenate and features.shape[1] > 1:
        candidates[CONCATENATED] = features.reshape(len(features), -1)
    cv = {name: [] for name in candidates}
    tests = {name: [] for name in candidates}
    chosen, accuracies = [], []
    for split in splits:
        train, test = np.asarray(split["train"]), np.asarray(split["test"])
        for name, x in candidates.items():
            cv[name].append(cross_validated_accuracy(x[train], labels[train], folds, C,
                                                     seed=split["seed"]))
            tests[name].append(probe_accuracy(x[train], labels[train], x[test],
                                              labels[test], C=C))
        best = max(candidates, key=lambda name: cv[name][-1])  # first on ties
        chosen.append(best)
        accuracies.append(tests[best][-1])
    return {
        "layer": collections.Counter(chosen).most_common(1)[0][0],
        "layers_chosen": chosen,
        "accuracies": accuracies,
        **spread(accuracies),
        "per_layer": {name: {"cv_accuracies": cv[name], "accuracies": tests[name],
                             **spread(tests[name])} for name in candidates},
        "classifier": "L2 logistic regression on standardised features",
        "C": C,
        "folds": folds,
        "window": window,
        "smallest_window": used,
        "sentences": len(sentences),
    }


def fine_tuning(family, preset, sentences, labels, splits, seed=0, epochs=4,
                learning_rate=2e-4, batch_size=16, sequence_length=None):
    """Fine-tunes the family's text classifier on each split and measures it.

    For each split: ``keras.utils.set_random_seed(seed + split["seed"])``,
    ``family.task(kzoo.models.TextClassifier).from_preset(preset,
    num_classes=2)``, Adam at ``learning_rate`` with the task's loss and
    metrics, ``epochs`` epochs on the training part, then the accuracy of
    the arg-max label on the test part.

    Args:
        family: a ``kzoo.models.Family``.
        preset: the trained model's preset folder.
        sentences, labels, splits: as ``feature_probe``.
        sequence_length: None (the preset's) or an int.

    Returns:
        None when the family has no ``TextClassifier``; else a JSON-ready
        dict: ``accuracies`` (per split), ``mean``, ``std`` (ddof=1) and the
        settings (``epochs``, ``learning_rate``, ``batch_size``,
        ``sequence_length``, ``task``).
    """
    import keras

    from kzoo.models import TextClassifier

    if not family.tasks_of(TextClassifier):
        return None
    task = family.task(TextClassifier)
    labels = np.asarray(labels)
    check_splits(splits, sentences, labels)
    kwargs = {} if sequence_length is None else {"sequence_length": sequence_length}
    accuracies, length = [], sequence_length
    for split in splits:
        keras.utils.set_random_seed(seed + split["seed"])
        model = task.from_preset(preset, num_classes=2, **kwargs)
        model.compile(optimizer=keras.optimizers.Adam(learning_rate))
        train, test = split["train"], split["test"]
        model.fit([sentences[i] for i in train], labels[train], batch_size=batch_size,
                  epochs=epochs, verbose=0)
        logits = model.predict([sentences[i] for i in test], batch_size=64, verbose=0)
        predicted = np.argmax(keras.ops.convert_to_numpy(logits), axis=-1)
        accuracies.append(float(np.mean(predicted == labels[test])))
        length = getattr(model.preprocessor, "sequence_length", length)
    return {"accuracies": accuracies, **spread(accuracies), "epochs": epochs,
            "learning_rate": learning_rate, "batch_size": batch_size,
            "sequence_length": length, "task": task.__name__}
