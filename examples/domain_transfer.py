"""Domain transfer: continued pretraining of a preset on the task's text,
then fine-tuning the adapted backbone on the task, against the unadapted one.

The ELMo paper fine-tunes its biLM on the task's text before training the
task; with BERT the same step is continued masked-LM pretraining on
in-domain text (Gururangan et al., 2020, "Don't Stop Pretraining"). Here:

1. ``BertMaskedLM.from_preset(PRESET)`` (all-MiniLM-L6-v2 by default, whose
   checkpoint has no masked-LM head: a new one is initialized as BERT does,
   with a warning) trained on the raw training sentences of the task (no
   labels), its held-out masked-LM loss printed before and after;
2. ``BertClassifier.from_preset`` on the adapted preset and on the original
   one, fine-tuned alike (same seed, data and steps), held-out accuracy of
   each.

The task: gensim's 200 Pang & Lee movie-review sentences (40 held out)::

    KERAS_BACKEND=jax python examples/domain_transfer.py

``--smoke`` runs one short epoch of each step on a few sentences, to check
that it works.
"""

import argparse
import math
import os
import tempfile

import keras
import numpy as np

import kzoo
from kzoo.datasets import pang_lee_polarity
from kzoo.training.continued_pretraining import adamw, masked_lm_held_out


def load_data(seed, held_out=40, smoke=False):
    """``(train, test)``: each ``(texts, labels)``, shuffled by ``seed``."""
    texts, labels = pang_lee_polarity(seed=seed)
    labels = np.array(labels)
    if smoke:
        texts, labels, held_out = texts[:32], labels[:32], 8
    return (texts[held_out:], labels[held_out:]), (texts[:held_out], labels[:held_out])


def adapt(args, train_texts, test_texts, output):
    """Continued masked-LM pretraining of ``args.preset`` on ``train_texts``;
    the adapted model saved to ``output``. Returns the held-out masked-LM
    losses before and after."""
    keras.utils.set_random_seed(args.seed)
    model = kzoo.BertMaskedLM.from_preset(
        args.preset, sequence_length=args.sequence_length, seed=args.seed)
    model.compile(optimizer=adamw(args.pretrain_learning_rate))
    before, count = masked_lm_held_out(model, test_texts, args.batch_size)
    model.fit(train_texts, batch_size=args.batch_size, epochs=args.pretrain_epochs,
              verbose=0)
    after, _ = masked_lm_held_out(model, test_texts, args.batch_size)
    print(f"held-out masked-LM loss ({count} masked tokens): {before:.3f} before, "
          f"{after:.3f} after (perplexity {math.exp(before):.1f} -> "
          f"{math.exp(after):.1f})")
    model.save_to_preset(output)
    return before, after


def fine_tune(preset, args, train, test):
    """Held-out accuracy of a ``BertClassifier`` on ``preset`` fine-tuned
    on ``train``."""
    keras.utils.set_random_seed(args.seed)
    model = kzoo.BertClassifier.from_preset(
        preset, num_classes=2, sequence_length=args.sequence_length)
    model.compile(optimizer=adamw(args.learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(*train, batch_size=args.batch_size, epochs=args.epochs, verbose=0)
    return model.evaluate(*test, batch_size=args.batch_size, verbose=0,
                          return_dict=True)["accuracy"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="minilm_l6_en_uncased")
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--pretrain-epochs", type=int, default=3)
    parser.add_argument("--pretrain-learning-rate", type=float, default=1e-4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default=None,
                        help="where to keep the adapted preset (default: a "
                             "temporary folder)")
    parser.add_argument("--smoke", action="store_true",
                        help="a few sentences, a short sequence, one epoch each")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sequence_length, args.batch_size = 16, 8
        args.pretrain_epochs = args.epochs = 1
    train, test = load_data(args.seed, smoke=args.smoke)
    print(f"Pang & Lee sentences: {len(train[0])} to train on, {len(test[0])} "
          f"held out; preset {args.preset}")
    with tempfile.TemporaryDirectory() as folder:
        adapted = args.output or os.path.join(folder, "adapted")
        adapt(args, train[0], test[0], adapted)
        scores = {"unadapted": fine_tune(args.preset, args, train, test),
                  "adapted": fine_tune(adapted, args, train, test)}
    print("held-out accuracy after fine-tuning: "
          + ", ".join(f"{name} backbone {score:.3f}" for name, score in scores.items()))
    return scores


if __name__ == "__main__":
    main()
