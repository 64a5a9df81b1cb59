"""``kzoo pretrain``: train a registered model family from raw text files."""

import os

HELP = "pretrain word2vec, ELMo, GPT or BERT on text files; writes a preset folder"
#: the options are the families' (their records' defaults and own options)
READS_FAMILIES = True
#: the options every family's recipe reads (its defaults fill the unset ones)
SHARED = ("batch_size", "learning_rate", "vocabulary_size", "sequence_length",
          "hidden_dim", "num_layers", "num_heads")


def _trainable():
    from kzoo.models.family import families

    return [f for f in families() if f.pretraining is not None]


def EXAMPLES():  # noqa: N802 (the other commands' EXAMPLES is a string)
    lines = [f"  {f.pretraining.example}" for f in _trainable() if f.pretraining.example]
    return "\n" + "\n".join(lines) + """

The corpus is plain text, a sentence or paragraph a line; a blank line (or
a file's end) ends a document. Curves (curves.png), TensorBoard logs and a
checkpoint after every epoch go to OUTPUT.run/; run the same command again
after a kill or Ctrl-C and it resumes from the last finished epoch.

Continued pretraining (domain transfer) starts from a preset's tokenizer,
size and weights instead, and prints the held-out loss before and after:
  kzoo pretrain bert --from minilm_l6_en_uncased --corpus news.txt --output runs/minilm-news
"""


def _defaults(option):
    """``"elmo 32, gpt 16"``: the families' defaults of an option."""
    values = [f"{f.name} {f.pretraining.defaults[option]:g}" for f in _trainable()
              if f.pretraining.defaults.get(option) is not None]
    return ", ".join(values) or "none"


def add_arguments(parser):
    from kzoo.cli.prepare import add_vocabulary_sample

    parser.add_argument("family", choices=[f.name for f in _trainable()])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--corpus", nargs="+", metavar="FILE",
                        help="text files, plain or gzip (prepared into "
                             "OUTPUT.run/data first, then streamed)")
    source.add_argument("--data", metavar="DIR",
                        help="a folder `kzoo prepare` wrote (its tokenizer and "
                             "shards; the vocabulary options are its own)")
    parser.add_argument("--output", required=True, help="the preset folder to write")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"default per family: {_defaults('batch_size')}")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help=f"default per family: {_defaults('learning_rate')}")
    size = parser.add_argument_group("model size (defaults per family)")
    size.add_argument("--hidden-dim", type=int, default=None, help=_defaults("hidden_dim"))
    size.add_argument("--num-layers", type=int, default=None, help=_defaults("num_layers"))
    size.add_argument("--num-heads", type=int, default=None, help=_defaults("num_heads"))
    size.add_argument("--vocabulary-size", type=int, default=None,
                      help=_defaults("vocabulary_size"))
    size.add_argument("--sequence-length", type=int, default=None,
                      help=_defaults("sequence_length"))
    size.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-every", type=int, default=1000, metavar="BATCHES",
                        help="also checkpoint every this many batches of an epoch "
                             "(a killed run resumes at the next one; default 1000)")
    add_vocabulary_sample(parser)
    parser.add_argument(
        "--from", dest="from_preset", metavar="PRESET", default=None,
        help="continue pretraining a preset (a name or a folder) on the corpus: "
             "its tokenizer, size, dropout and weights; the held-out loss is "
             "printed before and after (families: "
             f"{', '.join(f.name for f in _trainable() if f.pretraining.continue_from)})")
    parser.add_argument("--held-out", type=float, default=0.1, metavar="FRACTION",
                        help="with --from: the share of the corpus (its last "
                             "documents) held out to measure the loss (default 0.1)")
    for family in _trainable():
        if family.pretraining.add_arguments is not None:
            family.pretraining.add_arguments(
                parser.add_argument_group(f"{family.title} only"))


def fill_defaults(args, recipe):
    """Sets each shared option the user left unset (None) to the family's
    default (``recipe.defaults``)."""
    for option in SHARED:
        if getattr(args, option) is None:
            setattr(args, option, recipe.defaults.get(option))
    return args


def run_dir(output):
    """Where a run keeps its checkpoint, curves and logs: OUTPUT.run/."""
    return os.path.normpath(output) + ".run"


def run(args):
    import keras

    from kzoo.cli.environment import CommandError
    from kzoo.models.family import get_family
    from kzoo.training import read_documents, resumable_fit

    family = get_family(args.family)
    recipe = family.pretraining
    if args.from_preset:
        if not args.corpus:
            raise CommandError("--from continues pretraining on text: pass "
                               "--corpus FILES (not --data).")
        return _continue(recipe, args)
    fill_defaults(args, recipe)
    folder = run_dir(args.output)
    keras.utils.set_random_seed(args.seed)
    if recipe.from_shards is not None:
        shards = _shards(family, args, folder)
        model, data = recipe.from_shards(shards, args)
        data["checkpoint_every"] = args.checkpoint_every
    elif args.data:
        raise CommandError(f"{family.title} trains from text only: pass --corpus.")
    else:
        model, data = recipe.build(read_documents(args.corpus), args)
    print(f"training {args.epochs} epochs; curves, logs and checkpoints in {folder}/")
    history = resumable_fit(model, args.epochs, folder,
                            title=f"kzoo pretrain {args.family}", **data)
    model.save_to_preset(args.output)
    _report(history, args.output)
    return 0


def _shards(family, args, folder):
    """The run's token shards: ``--data``, checked against the family and
    its corpus; or ``--corpus`` prepared into ``OUTPUT.run/data`` (kept when
    up to date). A run that resumes is refused data of another vocabulary,
    and a corpus that changed since it was prepared."""
    from kzoo.cli.environment import CommandError
    from kzoo.cli.prepare import options_of
    from kzoo.data import TokenShards, check_corpus_unchanged, prepare

    resuming = os.path.exists(os.path.join(folder, "checkpoint", "state.json"))
    if args.data:
        shards = TokenShards(args.data)
        if shards.family != family.name:
            raise CommandError(f"{args.data} was prepared for {shards.family}, not "
                               f"{family.name}: prepare the corpus with `kzoo "
                               f"prepare {family.name} ...`.")
        check_corpus_unchanged(shards)
    else:
        data = os.path.join(folder, "data")
        if resuming and os.path.exists(os.path.join(data, "manifest.json")):
            prepared = TokenShards(data)
            check_corpus_unchanged(prepared)
            asked = {k: v for k, v in options_of(family, args).items() if v is not None}
            changed = {k: v for k, v in asked.items() if prepared.manifest["options"].get(k) != v}
            if changed:
                raise CommandError(
                    f"{folder} is a run on data prepared with "
                    f"{prepared.manifest['options']}, not {changed}: resume with the "
                    "same options, or pass a new --output.")
        shards = prepare(family, args.corpus, data, options=options_of(family, args),
                         vocabulary_sample_mb=args.vocabulary_sample)
    _check_run_data(folder, shards, resuming)
    return shards


def _check_run_data(folder, shards, resuming):
    """Records which vocabulary the run trains on (``OUTPUT.run/data.json``);
    a resumed run on shards of another vocabulary is refused."""
    import json

    from kzoo.cli.environment import CommandError
    from kzoo.presets.atomic_files import atomic_file

    path = os.path.join(folder, "data.json")
    vocabulary = shards.manifest["tokenizer_sha256"]
    if resuming and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f)
        if recorded.get("tokenizer_sha256") != vocabulary:
            raise CommandError(
                f"{folder} was trained on {recorded.get('data')}, whose vocabulary "
                f"differs from {shards.directory}'s: resume with the same data, or "
                "pass a new --output.")
    os.makedirs(folder, exist_ok=True)
    with atomic_file(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"data": shards.directory, "tokenizer_sha256": vocabulary}))


def _continue(recipe, args):
    """``--from PRESET``: continued pretraining, the held-out measure
    before and after."""
    import keras

    from kzoo.cli.environment import CommandError
    from kzoo.training import read_documents, resumable_fit
    from kzoo.training.continued_pretraining import held_out_split

    if recipe.continue_from is None:
        raise CommandError(f"kzoo pretrain {args.family} cannot continue from a "
                           "preset; drop --from to pretrain from scratch.")
    if args.batch_size is None:
        args.batch_size = recipe.defaults.get("batch_size")
    train, held_out = held_out_split(read_documents(args.corpus), args.held_out)
    keras.utils.set_random_seed(args.seed)
    model, data, evaluate = recipe.continue_from(args.from_preset, train, args)
    print(f"held out: {sum(len(d) for d in held_out):,} lines "
          f"({len(held_out):,} documents)")
    print(f"held-out before: {evaluate(model, held_out, args.batch_size)}")
    folder = run_dir(args.output)
    print(f"training {args.epochs} epochs; curves, logs and checkpoints in {folder}/")
    history = resumable_fit(model, args.epochs, folder,
                            title=f"kzoo pretrain {args.family} --from", **data)
    print(f"held-out after: {evaluate(model, held_out, args.batch_size)}")
    model.save_to_preset(args.output)
    _report(history, args.output)
    return 0


def _report(history, output):
    last = ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items()
                     if "loss" in k or "accuracy" in k)
    print(f"last epoch: {last}")
    print(f"saved the preset to {output}")
