"""``compare``: the four generations trained on one corpus for one budget,
measured with the same probes, reported together (``kzoo compare``)."""

import dataclasses
import os
import platform
import tempfile
import time

from kzoo.analysis.compare.report import RESULTS, SCHEMA, read_results, write_report, \
    write_results

#: fewer training words than this leave nothing for the probes to measure
MIN_TRAIN_WORDS = 1000


def machine():
    """This machine in a few words: cores, CPU model and memory (Linux's
    ``/proc``; the platform's processor name elsewhere)."""
    cores = os.cpu_count()
    model, memory = platform.processor() or platform.machine(), None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as f:
            kib = int(f.readline().split()[1])
        memory = kib / 2 ** 20
    except (OSError, ValueError, IndexError):
        pass
    if hasattr(os, "sched_getaffinity"):
        cores = len(os.sched_getaffinity(0))
    return f"{cores}-core {model}" + (f", {memory:.0f} GiB RAM" if memory else "")


def _families(names):
    from kzoo.models.family import families, get_family

    if names is None:  # in the order they appeared: word2vec, ELMo, GPT, BERT
        return sorted((f for f in families() if f.pretraining is not None),
                      key=lambda f: (not f.published, f.published, f.name))
    names = [names] if isinstance(names, str) else list(names)
    if not names:
        raise ValueError("`families` is empty: name one or more families, or pass None "
                         "for all.")
    chosen = []
    for name in names:
        family = get_family(name)
        if family.pretraining is None:
            raise ValueError(f"{family.title} has no pretraining recipe, so it cannot "
                             "be trained for a comparison.")
        if family not in chosen:
            chosen.append(family)
    return chosen


def _check_output(output):
    try:
        os.makedirs(output, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=output):
            pass
    except OSError as exc:
        raise ValueError(f"Cannot write to the output folder {output!r} ({exc.strerror}): "
                         "choose another --output.") from None


def _check_corpus(corpus):
    files = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus or ())
    if not files:
        raise ValueError("No corpus given: pass one or more text files (--corpus FILES).")
    for path in files:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"The corpus file {os.fspath(path)!r} does not exist.")
        if os.path.getsize(path) == 0:
            raise ValueError(f"The corpus file {os.fspath(path)!r} is empty.")
    return [os.path.abspath(p) for p in files]


def _plan(plan, output, seed, minutes, sha256):
    """``{family name: steps}`` from a plan (a results.json), or {}. A plan
    of another corpus, seed or budget is refused (its steps would not
    repeat anything)."""
    implicit = plan is None
    if implicit:
        plan = os.path.join(output, RESULTS)
        if not os.path.exists(plan):
            return None, {}
    results = read_results(plan)
    ran = (results.get("seed"), results.get("minutes"),
           (results.get("corpus") or {}).get("sha256"))
    if ran != (seed, minutes, sha256):
        fix = (f"remove {plan} or choose another --output to start afresh" if implicit
               else "pass the same corpus, --minutes and --seed, or no --plan")
        raise ValueError(
            f"{plan} was a run with seed {ran[0]}, {ran[1]} minutes and corpus "
            f"sha256 {str(ran[2])[:12]}; this one has seed {seed}, {minutes} minutes "
            f"and {sha256[:12]}, so its steps cannot be replayed: {fix}.")
    return plan, {name: entry["cost"]["steps"]
                  for name, entry in results.get("families", {}).items()}


def context_window(options):
    """Words kept on either side of a word in the probes' contexts: 16, fewer
    for a model trained on short sequences (``sequence_length // 8``, at
    least 4), so that a window's tokens fit the model's length."""
    length = options.get("sequence_length")
    return 16 if not length else max(4, min(16, int(length) // 8))


def _timed(print_fn, what, function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    print_fn(f"  {what}: {time.perf_counter() - start:.0f} s", flush=True)
    return value


def compare(corpus, minutes, output, families=None, seed=0, plan=None, print_fn=print,
            command=None, max_wordnet_pairs=None, max_contexts=8, work=None):
    """Trains each family on the same corpus for the same budget, measures
    each with the same probes, and writes the report.

    Args:
        corpus: a text file or a list of them (a blank line between documents).
        minutes: float > 0. Training wall-clock per family (sizes follow it).
        output: folder for ``results.json``, ``report.md`` and the PNGs.
        families: names (default: every family with a pretraining recipe).
        seed: int. Training seed.
        plan: a ``results.json`` (or its folder) whose steps are replayed:
            each family trains exactly the steps it reached there, which
            gives the same numbers on the same backend. Default: the
            ``results.json`` already in ``output``, if any.
        print_fn: where progress lines go.
        command: the command line to record (default: this call).
        max_wordnet_pairs: None (all) or the most WordNet pairs scored.
        max_contexts: int. Occurrences averaged per word for word similarity.
        work: folder for the corpus's two parts and each family's data and
            preset (``work/<family>/preset``); default ``output``.

    Returns:
        The results dict (``results.json``; see the docs' schema).
    """
    import keras

    from kzoo.analysis import load_word_in_context
    from kzoo.analysis.compare import probes, training
    from kzoo.datasets import pang_lee_polarity
    from kzoo.models import TextClassifier
    from kzoo.training import read_documents
    from kzoo.version import __version__

    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) \
            or not minutes > 0:
        raise ValueError(f"`minutes` must be a number > 0, got {minutes!r}.")
    chosen = _families(families)
    files = _check_corpus(corpus)
    output = os.path.abspath(output)
    work = os.path.abspath(work or output)
    _check_output(output)
    _check_output(work)
    split = training.split_corpus(files, os.path.join(work, "corpus"))
    plan, steps = _plan(plan, output, seed, minutes, split.sha256)
    if split.train_words < MIN_TRAIN_WORDS or split.held_out_words == 0:
        raise ValueError(
            f"The corpus is too small: {split.train_words} training words and "
            f"{split.held_out_words} held out (the last 10% of {split.documents} "
            f"documents); give at least {MIN_TRAIN_WORDS} words in several documents.")
    print_fn(f"corpus: {split.documents} documents, {split.train_words:,} training words, "
             f"{split.held_out_words:,} held out; {len(chosen)} families, "
             f"{minutes:g} min of training each on {keras.backend.backend()}", flush=True)

    texts = [line for document in read_documents(split.train_files) for line in document]
    vocabulary = probes.evaluation_vocabulary(texts)
    pairs = probes.wordnet_pairs(max_pairs=max_wordnet_pairs, seed=seed)
    sentences, labels = pang_lee_polarity()
    splits = probes.sentiment_splits(len(sentences), labels)
    results = {"schema": SCHEMA, "kzoo": __version__, "backend": keras.backend.backend(),
               "machine": machine(),
               "command": command or (f"kzoo.analysis.compare.compare({files!r}, "
                                      f"minutes={minutes!r}, output={output!r})"),
               "seed": seed, "minutes": minutes, "plan": plan,
               "corpus": {**dataclasses.asdict(split), "sources": files},
               "evaluation_words": len(vocabulary), "families": {}}

    for family in chosen:
        replay = steps.get(family.name)
        print_fn(f"== {family.title}: " + (f"replaying {replay} steps from {plan}"
                                          if replay is not None
                                          else f"{minutes:g} min of training"),
                 flush=True)
        trained = training.train_family(family, split, minutes,
                                        os.path.join(work, family.name), seed=seed,
                                        steps=replay, print_fn=print_fn)
        wic = load_word_in_context(trained.preset)
        window = context_window(trained.options)
        entry = {"title": family.title, "options": trained.options,
                 "cost": {k: v for k, v in dataclasses.asdict(trained).items()
                          if k not in ("family", "preset", "options")}}
        entry["word_similarity"] = _timed(
            print_fn, "word similarity and analogies", probes.word_similarity, wic, texts,
            vocabulary, max_contexts=max_contexts, window=window, seed=seed)
        entry["polysemy"] = _timed(print_fn, "polysemy (WordNet pairs)", probes.polysemy,
                                   wic, pairs)
        entry["feature_probe"] = _timed(print_fn, "frozen-feature probe",
                                        probes.feature_probe, wic, sentences, labels, splits,
                                        window=window)
        entry["fine_tuning"] = None
        if family.tasks_of(TextClassifier):
            entry["fine_tuning"] = _timed(print_fn, "fine-tuning", probes.fine_tuning,
                                          family, trained.preset, sentences, labels,
                                          splits, seed=seed)
        results["families"][family.name] = entry
        write_results(results, output)  # a family done is kept if a later one fails
    paths = write_report(results, output)
    print_fn(f"wrote {paths['report']} and {paths['results']}", flush=True)
    return results
