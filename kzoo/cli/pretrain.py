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
"""


def _defaults(option):
    """``"elmo 32, gpt 16"``: the families' defaults of an option."""
    values = [f"{f.name} {f.pretraining.defaults[option]:g}" for f in _trainable()
              if f.pretraining.defaults.get(option) is not None]
    return ", ".join(values) or "none"


def add_arguments(parser):
    parser.add_argument("family", choices=[f.name for f in _trainable()])
    parser.add_argument("--corpus", nargs="+", required=True, metavar="FILE",
                        help="plain-text files")
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
    for family in _trainable():
        if family.pretraining.add_arguments is not None:
            family.pretraining.add_arguments(
                parser.add_argument_group(f"{family.title} only"))


def run_dir(output):
    """Where a run keeps its checkpoint, curves and logs: OUTPUT.run/."""
    return os.path.normpath(output) + ".run"


def run(args):
    import keras

    from kzoo.models.family import get_family
    from kzoo.training import read_documents, resumable_fit

    recipe = get_family(args.family).pretraining
    for option in SHARED:
        if getattr(args, option) is None:
            setattr(args, option, recipe.defaults.get(option))
    documents = read_documents(args.corpus)
    keras.utils.set_random_seed(args.seed)
    model, data = recipe.build(documents, args)
    folder = run_dir(args.output)
    print(f"training {args.epochs} epochs; curves, logs and checkpoints in {folder}/")
    history = resumable_fit(model, args.epochs, folder,
                            title=f"kzoo pretrain {args.family}", **data)
    model.save_to_preset(args.output)
    last = ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items()
                     if "loss" in k or "accuracy" in k)
    print(f"last epoch: {last}")
    print(f"saved the preset to {args.output}")
    return 0
