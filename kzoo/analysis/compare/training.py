"""Training the families on one corpus for one budget (``kzoo compare``).

``split_corpus`` holds out the same documents for every family;
``train_family`` trains one family through its own ``kzoo pretrain``
recipe (its preparation into token shards where it has one, else its
in-memory ``build``), at the sizes its record gives for the budget
(``Pretraining.budget_options``), until the budget is spent, then saves
the preset and measures the held-out part (``Pretraining.held_out``).

Training time counts from the end of the first batch, so a backend's
compilation of the training step (JAX's and TensorFlow's first call) does
not eat the budget (``first_step_seconds`` keeps it); the preparation
(learning the vocabulary, writing the shards) and building the model are
timed apart (``preparation_seconds``).
A run with ``steps`` trains exactly that many batches whatever the time:
with the same seed, on the same backend, it repeats a timed run that
reached those steps.
"""

import argparse
import dataclasses
import hashlib
import os
import time

import keras

#: fit's epochs (one per pass over the corpus): the budget ends training
#: first, so a small corpus is seen many times
MAX_EPOCHS = 100_000


@dataclasses.dataclass
class Corpus:
    """The corpus as every family sees it.

    Attributes:
        train_files: the training part (one file; documents a blank line apart).
        held_out_files: the held-out part (one file), the last documents.
        documents: the corpus's documents, both parts together.
        train_words, held_out_words: whitespace-separated words of each part.
        sha256: of the corpus files' bytes, in the order given.
    """

    train_files: list
    held_out_files: list
    documents: int
    train_words: int
    held_out_words: int
    sha256: str


@dataclasses.dataclass
class Trained:
    """One family trained for a budget.

    Attributes:
        family: the family's name.
        preset: the preset folder (``save_to_preset`` of the trained task).
        options: the ``kzoo pretrain`` options used: the shared ones
            (sizes, batch size, learning rate), ``dropout``, ``seed`` and
            the family's own.
        parameters: the trained task's parameters (its heads included).
        steps: the batches trained.
        training_tokens: the training part's words times the passes made
            over it: the same unit for every family, whatever its tokens. A
            pass cut by the budget counts its share of batches, by the
            length Keras knows or that of an earlier whole pass (a first
            pass of unknown length, as word2vec's stream, counts nothing).
        training_seconds: from the end of the first batch to the end of
            the last (the budget's clock).
        first_step_seconds: the first batch (the training step's
            compilation on JAX and TensorFlow).
        preparation_seconds: preparing the data and building the model.
        loss_curve: ``[seconds, step, loss]`` rows, at most about 200
            (``loss`` as Keras reports it: the mean over the epoch so far).
        held_out: the family's held-out measures (``Pretraining.held_out``;
            empty where it has none).
    """

    family: str
    preset: str
    options: dict
    parameters: int
    steps: int
    training_tokens: int
    training_seconds: float
    first_step_seconds: float
    preparation_seconds: float
    loss_curve: list
    held_out: dict


def split_corpus(files, folder, held_out=0.1):
    """Splits a corpus into a training and a held-out part, written to
    ``folder/train.txt`` and ``folder/held_out.txt``: the last ``held_out``
    of the documents (at least one) are held out
    (``kzoo.training.continued_pretraining.held_out_split``). A corpus
    without a blank line (one article a line, as gensim's Lee corpus) has
    its lines as documents.

    Args:
        files: the corpus files (plain or gzip UTF-8 text; a blank line
            between documents).
        folder: str. Where the two parts are written.
        held_out: float in (0, 1).

    Returns:
        A ``Corpus``.
    """
    from kzoo.data import corpus as corpus_files
    from kzoo.presets.atomic_files import atomic_file
    from kzoo.training import read_documents
    from kzoo.training.continued_pretraining import held_out_split

    files = [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike))
                                    else files)]
    if not files:
        raise ValueError("`files` is empty: give the corpus's text files.")
    documents = read_documents(corpus_files.check_files(files))
    if not documents:
        raise ValueError(f"{', '.join(files)} hold no text: give a corpus with lines.")
    if len(documents) == 1:  # no blank line: one document a line
        documents = [[line] for line in documents[0]]
    train, held = held_out_split(documents, held_out)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for name, part in (("train.txt", train), ("held_out.txt", held)):
        path = os.path.join(folder, name)
        with atomic_file(path, "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(document) for document in part) + "\n")
        paths.append(path)
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return Corpus(train_files=[paths[0]], held_out_files=[paths[1]],
                  documents=len(documents), train_words=_words(train),
                  held_out_words=_words(held), sha256=digest.hexdigest())


def _words(documents):
    return sum(len(line.split()) for document in documents for line in document)


def budget_options(family, minutes):
    """The family's model-size options for a budget of ``minutes``
    (``Pretraining.budget_options``; ``{}`` where the record has none)."""
    recipe = _recipe(family)
    if recipe.budget_options is None:
        return {}
    return dict(recipe.budget_options(minutes))


def pretrain_options(family, corpus_files, output, **values):
    """``kzoo pretrain FAMILY --corpus ... --output ...``'s options: the
    parser's defaults, the family's defaults where those are unset, then
    ``values`` (an unknown name raises)."""
    from kzoo.cli import pretrain

    family = _family(family)
    parser = argparse.ArgumentParser(prog="kzoo pretrain")
    pretrain.add_arguments(parser)
    options = parser.parse_args([family.name, "--corpus", *corpus_files,
                                 "--output", output])
    for name, value in values.items():
        if not hasattr(options, name):
            raise ValueError(f"{name!r} is no option of kzoo pretrain {family.name}.")
        setattr(options, name, value)
    pretrain.fill_defaults(options, family.pretraining)
    return options


def train_family(family, corpus, minutes, folder, seed=0, steps=None, options=None,
                 print_fn=print):
    """Trains a family on ``corpus.train_files`` for ``minutes`` of training
    (or exactly ``steps`` batches) and saves it.

    Args:
        family: a ``kzoo.models.Family`` or its name.
        corpus: a ``Corpus`` (``split_corpus``).
        minutes: float > 0. The training budget; also picks the sizes
            (``budget_options``).
        folder: str. ``folder/data`` gets the prepared shards,
            ``folder/preset`` the trained preset.
        seed: int. ``keras.utils.set_random_seed`` and the recipe's data
            order.
        steps: int or None. Train exactly this many batches (a replay of a
            run that reached them) instead of for ``minutes``.
        options: a dict of ``kzoo pretrain`` options set over the budget's
            sizes (``{"hidden_dim": 32}``), or None.
        print_fn: where progress lines go.

    Returns:
        A ``Trained``.
    """
    from kzoo.callbacks import TimeBudget
    from kzoo.data import prepare
    from kzoo.training import read_documents

    family = _family(family)
    recipe = _recipe(family)
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) \
            or not minutes > 0:
        raise ValueError(f"`minutes` must be a number > 0, got {minutes!r}.")
    budget = TimeBudget(seconds=60.0 * minutes, steps=steps)  # checks `steps`
    preset = os.path.join(folder, "preset")
    options = pretrain_options(family, corpus.train_files, preset, seed=seed,
                               **{**budget_options(family, minutes), **(options or {})})
    start = time.perf_counter()
    if recipe.from_shards is not None and recipe.prepare is not None:
        from kzoo.cli.prepare import options_of

        shards = prepare(family, corpus.train_files, os.path.join(folder, "data"),
                         options=options_of(family, options),
                         vocabulary_sample_mb=options.vocabulary_sample, verbose=False)
        # Seeded right before the model is built: whatever the preparation
        # drew does not move the model's start.
        keras.utils.set_random_seed(seed)
        model, data = recipe.from_shards(shards, options)
    else:
        keras.utils.set_random_seed(seed)
        model, data = recipe.build(read_documents(corpus.train_files), options)
    preparation_seconds = time.perf_counter() - start
    what = f"{steps} steps" if steps is not None else f"{minutes:g} minutes"
    print_fn(f"{family.title}: training for {what}", flush=True)
    passes = _Passes()
    fit_budget(model, data, [budget, passes])
    model.save_to_preset(preset)
    held_out = {}
    if recipe.held_out is not None:
        held_out = recipe.held_out(model, read_documents(corpus.held_out_files),
                                   options.batch_size or 32)
    trained = Trained(
        family=family.name, preset=preset, options=_used(family, options),
        parameters=int(model.count_params()), steps=budget.steps,
        training_tokens=int(round(corpus.train_words * passes.passes)),
        training_seconds=float(budget.elapsed),
        first_step_seconds=float(budget.first_step_seconds or 0.0),
        preparation_seconds=float(preparation_seconds),
        loss_curve=[[float(s), int(n), float(v)] for s, n, v in budget.curve],
        held_out={k: float(v) for k, v in held_out.items()})
    first = trained.loss_curve[0][2] if trained.loss_curve else float("nan")
    last = trained.loss_curve[-1][2] if trained.loss_curve else float("nan")
    print_fn(f"{family.title}: {trained.steps:,} steps in {trained.training_seconds:.0f} s, "
             f"loss {first:.3f} -> {last:.3f}; held out {trained.held_out}", flush=True)
    return trained


def fit_budget(model, data, callbacks):
    """Fits ``model`` on a recipe's data arguments (``data``,
    ``data_for_epoch`` or ``batches_for_epoch``, plus ``fit`` arguments)
    for up to ``MAX_EPOCHS`` epochs, until a callback sets
    ``model.stop_training`` (a ``TimeBudget``). No checkpoints: a budget
    run does not resume."""
    data = dict(data)
    data.pop("checkpoint_every", None)
    kwargs = {"verbose": 0, **data}
    kwargs["callbacks"] = list(kwargs.pop("callbacks", None) or ()) + list(callbacks)
    stream = kwargs.pop("data", None)
    for_epoch = kwargs.pop("data_for_epoch", None)
    batches_for_epoch = kwargs.pop("batches_for_epoch", None)
    if sum(x is not None for x in (stream, for_epoch, batches_for_epoch)) != 1:
        raise ValueError("the recipe must give exactly one of `data`, "
                         "`data_for_epoch` and `batches_for_epoch`.")
    if stream is not None:
        model.fit(stream, epochs=MAX_EPOCHS, **kwargs)
        return
    for epoch in range(MAX_EPOCHS):
        epoch_data = (for_epoch(epoch) if for_epoch is not None
                      else batches_for_epoch(epoch, 0))
        model.fit(epoch_data, epochs=epoch + 1, initial_epoch=epoch, shuffle=False,
                  **kwargs)
        if model.stop_training:
            return


class _Passes(keras.callbacks.Callback):
    """Counts the passes over the training data: an epoch's steps over its
    length (Keras' ``steps`` when it knows them, else the length of an
    earlier, whole epoch)."""

    def __init__(self):
        super().__init__()
        self.passes = 0.0
        self.whole = None
        self._steps = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self._steps += 1

    def on_epoch_end(self, epoch, logs=None):
        length = (self.params or {}).get("steps")
        if not self.model.stop_training:
            self.whole = self._steps
            self.passes += 1.0
        elif length or self.whole:
            self.passes += min(self._steps / (length or self.whole), 1.0)


def _used(family, options):
    """The options the family's recipe reads (those set), as JSON values."""
    from kzoo.cli.pretrain import SHARED

    names = list(SHARED) + ["dropout", "seed"]
    if family.pretraining.add_arguments is not None:
        parser = argparse.ArgumentParser()
        family.pretraining.add_arguments(parser.add_argument_group())
        names += [a.dest for a in parser._actions if a.dest != "help"]
    out = {}
    for key in names:
        value = getattr(options, key)
        if value is None:
            continue
        if isinstance(value, (str, int, float, bool)) or value is None:
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = list(value)
        else:
            out[key] = str(value)
    return out


def _family(family):
    from kzoo.models.family import Family, get_family

    return family if isinstance(family, Family) else get_family(family)


def _recipe(family):
    family = _family(family)
    if family.pretraining is None:
        raise ValueError(f"{family.title} has no pretraining recipe: it cannot be "
                         "trained for a comparison.")
    return family.pretraining
