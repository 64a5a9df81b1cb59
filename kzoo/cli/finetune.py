"""``kzoo finetune``: fine-tune a preset on a labelled data file, for one task."""

HELP = "fine-tune a preset (classify, regress, tag, answer, choose); writes a preset folder"
EXAMPLES = """
  kzoo finetune --model minilm_l6_en_uncased --train train.csv \\
      --validation dev.csv --task classify --output runs/sentiment
  kzoo finetune --model runs/bert --task tag --train ner.conll --output runs/ner

Data, by task:
  classify  CSV / TSV / JSONL: 'text' (and 'text_pair' for pairs), 'label':
            integers, or names (mapped to ids in sorted order; printed and
            kept in the preset: predictions and exports give the names)
  regress   the same columns, 'label' a number (STS-B's scores)
  tag       CoNLL (a word and its tag a line, blank lines between
            sentences), or JSONL / CSV / TSV with 'tokens' and 'tags'
  answer    SQuAD's JSON (data > paragraphs > context, qas > question, answers)
  choose    'context' (or SWAG's 'sent1', 'sent2'), 'ending0'..'endingN', 'label'

As with `kzoo pretrain`, OUTPUT.run/ gets curves.png, TensorBoard logs and a
checkpoint per epoch, and the same command resumes a killed run. `kzoo
evaluate --model OUTPUT --data FILE` prints the task's scores.
"""

TASKS = ("classify", "regress", "tag", "answer", "choose")


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a preset whose family has the task (BERT: all; GPT: "
                             "classify, regress, choose): registered name or folder")
    parser.add_argument("--train", required=True, metavar="FILE")
    parser.add_argument("--validation", default=None, metavar="FILE")
    parser.add_argument("--task", choices=TASKS, default="classify")
    parser.add_argument("--output", required=True, help="the preset folder to write")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)


def task_shape(task):
    """The generic task class of a ``--task`` name."""
    import kzoo

    return {"classify": kzoo.models.TextClassifier,
            "regress": kzoo.models.TextClassifier,
            "tag": kzoo.models.TokenClassifier,
            "answer": kzoo.models.QuestionAnswerer,
            "choose": kzoo.models.MultipleChoice}[task]


def _examples(task, path, names=None):
    """``(x, y, names, description)`` of a data file for ``task``."""
    from kzoo import training

    if task == "classify":
        x, y, names = training.read_labeled_file(path, label_names=names)
        return x, y, names, "examples" + (" (sentence pairs)" if isinstance(x, tuple) else "")
    if task == "regress":
        x, y = training.read_scored_file(path)
        return x, y, None, "scored examples" + (
            " (sentence pairs)" if isinstance(x, tuple) else "")
    if task == "tag":
        words, tags, names = training.read_tagged_file(path, label_names=names)
        return words, tags, names, "tagged sentences"
    if task == "answer":
        questions, contexts, answers = training.read_squad_file(path)
        first = {"answer_start": [a[0]["answer_start"] for a in answers],
                 "text": [a[0]["text"] for a in answers]}
        return (questions, contexts), first, None, "questions"
    contexts, endings, labels = training.read_choices_file(path)
    return (contexts, endings), labels, None, "questions"


def _task_arguments(task, y, names, x, sequence_length):
    kwargs = {"sequence_length": sequence_length}
    if task == "classify":
        kwargs["num_classes"] = len(names) if names else int(y.max()) + 1
        kwargs["label_names"] = names
        if isinstance(x, tuple):
            kwargs["num_segments"] = 2
    elif task == "regress":
        kwargs["num_classes"] = 1
        if isinstance(x, tuple):
            kwargs["num_segments"] = 2
    elif task == "tag":
        kwargs["num_classes"] = len(names)
        kwargs["label_names"] = names
    elif task == "choose":
        kwargs["num_choices"] = len(x[1][0])
    return kwargs


def run(args):
    import keras

    from kzoo.cli.loading import family
    from kzoo.cli.pretrain import run_dir
    from kzoo.training import resumable_fit, shuffled_epoch

    x, y, names, what = _examples(args.task, args.train)
    validation = None
    if args.validation:
        vx, vy, _, _ = _examples(args.task, args.validation, names)
        validation = shuffled_epoch((vx, vy), 0, args.batch_size, args.seed)
    if names and args.task == "classify":
        print("string labels mapped to ids: "
              + ", ".join(f"{n!r} -> {i}" for i, n in enumerate(names)))
    elif names:
        print(f"{len(names)} tags: {', '.join(names)}")
    count = len(x[0]) if isinstance(x, tuple) else len(x)
    classes = ""
    if args.task == "classify":
        classes = f", {len(names) if names else int(y.max()) + 1} classes"
    print(f"data: {count} training {what}{classes}"
          + (f", {args.validation} for validation" if args.validation else ""))
    keras.utils.set_random_seed(args.seed)
    # The preset's family's task of that shape (a ValueError names the
    # families that have one).
    cls = family(args.model).task(task_shape(args.task))
    model = cls.from_preset(args.model, load_task_head=False,
                            **_task_arguments(args.task, y, names, x,
                                              args.sequence_length))
    model.compile(optimizer=keras.optimizers.AdamW(args.learning_rate,
                                                   weight_decay=0.01))
    folder = run_dir(args.output)
    print(f"model: {type(model).__name__} on {args.model}; curves, logs and "
          f"checkpoints in {folder}/")
    history = resumable_fit(
        model, args.epochs, folder, title=f"kzoo finetune {args.model}",
        data_for_epoch=lambda epoch: shuffled_epoch((x, y), epoch, args.batch_size,
                                                    args.seed),
        validation_data=validation)
    model.save_to_preset(args.output)
    last = ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items())
    print(f"last epoch: {last}")
    print(f"saved the preset to {args.output}")
    return 0
