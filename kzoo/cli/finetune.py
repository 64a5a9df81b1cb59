"""``kzoo finetune``: fine-tune a preset's text classifier on a labelled data file."""

import json
import os

HELP = "fine-tune a BERT or GPT preset on a CSV/TSV/JSONL file; writes a preset folder"
EXAMPLES = """
  kzoo finetune --model minilm_l6_en_uncased --train train.csv \\
      --validation dev.csv --task classify --output runs/sentiment

The data file has a 'text' column (and 'text_pair' for sentence pairs) and
a 'label' column: integers, or strings that are mapped to ids (sorted; the
mapping is printed and saved as OUTPUT/labels.json). As with `kzoo
pretrain`, OUTPUT.run/ gets curves.png, TensorBoard logs and a checkpoint
per epoch, and the same command resumes a killed run.
"""

TASKS = ("classify",)


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a preset whose family has a text classifier "
                             "(BERT, GPT): registered name or folder")
    parser.add_argument("--train", required=True, metavar="FILE")
    parser.add_argument("--validation", default=None, metavar="FILE")
    parser.add_argument("--task", choices=TASKS, default="classify")
    parser.add_argument("--output", required=True, help="the preset folder to write")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)


def _classifier(preset, num_classes, pairs, sequence_length):
    import kzoo
    from kzoo.cli.loading import family

    # The preset's family's TextClassifier (a ValueError names the families
    # that have one).
    cls = family(preset).task(kzoo.models.TextClassifier)
    kwargs = {"num_segments": 2} if pairs else {}
    return cls.from_preset(preset, num_classes=num_classes,
                           sequence_length=sequence_length,
                           load_task_head=False, **kwargs)


def run(args):
    import keras

    from kzoo.cli.pretrain import run_dir
    from kzoo.training import read_labeled_file, resumable_fit, shuffled_epoch

    x, y, names = read_labeled_file(args.train)
    validation, vy = None, ()
    if args.validation:
        vx, vy, _ = read_labeled_file(args.validation, label_names=names)
        validation = shuffled_epoch((vx, vy), 0, args.batch_size, args.seed)
    if names:
        print("string labels mapped to ids: "
              + ", ".join(f"{n!r} -> {i}" for i, n in enumerate(names)))
    num_classes = len(names) if names else int(y.max()) + 1
    pairs = isinstance(x, tuple)
    print(f"data: {len(y)} training examples{' (sentence pairs)' if pairs else ''}"
          f", {num_classes} classes"
          + (f", {len(vy)} for validation" if args.validation else ""))
    keras.utils.set_random_seed(args.seed)
    model = _classifier(args.model, num_classes, pairs, args.sequence_length)
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
    if names:
        with open(os.path.join(args.output, "labels.json"), "w", encoding="utf-8") as f:
            json.dump(names, f)
    last = ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items())
    print(f"last epoch: {last}")
    print(f"saved the preset to {args.output}")
    return 0
