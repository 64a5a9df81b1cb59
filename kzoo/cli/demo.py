"""``kzoo demo``: fine-tune BERT (MiniLM-L6) on real movie-review sentences,
export a SavedModel and serve it from a fresh process."""

import os
import sys
import time

HELP = "fine-tune BERT (MiniLM-L6) on movie reviews, export and serve it"
EXAMPLES = """
  kzoo demo                       # TensorFlow; ~70 s on 2 CPU cores
  kzoo demo --backend jax --epochs 2
  kzoo demo --smoke               # 32 sentences, 1 epoch, length 16: a quick check
"""


def add_arguments(parser):
    parser.add_argument("--preset", default="minilm_l6_en_uncased")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--held-out", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="runs/demo")
    parser.add_argument("--smoke", action="store_true",
                        help="a quick check: 24 sentences to train on, 8 held "
                             "out, 1 epoch, sequence length 16")


_SERVE_SNIPPET = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
served = tf.saved_model.load(sys.argv[1])
fn = served.signatures["serving_default"]
sentences = json.loads(sys.argv[2])
out = fn(text=tf.constant(sentences))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))
"""


def run(args):
    import json
    import subprocess

    import keras
    import numpy as np

    import kzoo
    from kzoo.datasets import pang_lee_polarity

    start = time.time()
    if args.smoke:
        args.epochs, args.sequence_length, args.held_out = 1, 16, 0.25
    print(f"kzoo demo on the {keras.config.backend()} backend "
          f"(set KERAS_BACKEND to change it)")
    texts, labels = pang_lee_polarity(seed=args.seed)
    if args.smoke:
        texts, labels = texts[:32], labels[:32]
    labels = np.array(labels)
    held_out = int(round(len(texts) * args.held_out))
    train_x, train_y = texts[held_out:], labels[held_out:]
    test_x, test_y = texts[:held_out], labels[:held_out]
    print(f"data: Pang & Lee movie-review sentences (gensim's copy): "
          f"{len(train_x)} to train on, {len(test_x)} held out")

    keras.utils.set_random_seed(args.seed)
    model = kzoo.models.TextClassifier.from_preset(  # the preset's family's
        args.preset, num_classes=2, sequence_length=args.sequence_length
    )
    model.compile(optimizer=keras.optimizers.AdamW(args.learning_rate,
                                                   weight_decay=0.01))
    print(f"model: {type(model).__name__} on {args.preset} "
          f"({model.backbone.count_params() / 1e6:.1f}M backbone parameters)")
    before = model.evaluate(test_x, test_y, batch_size=args.batch_size,
                            verbose=0, return_dict=True)["accuracy"]
    model.fit(train_x, train_y, batch_size=args.batch_size, epochs=args.epochs,
              validation_data=(test_x, test_y), verbose=1)
    after = model.evaluate(test_x, test_y, batch_size=args.batch_size,
                           verbose=0, return_dict=True)["accuracy"]
    print(f"held-out accuracy: {after:.3f} ({len(test_x)} sentences; "
          f"{before:.3f} before fine-tuning)")

    export_dir = os.path.join(args.output, "saved_model")
    kzoo.export.saved_model(model, export_dir)
    print(f"exported a SavedModel to {export_dir}")

    examples = [
        "a gorgeous , witty , seductive movie .",
        "the plot is a tedious mess and the acting is worse .",
        "an intelligent and moving film that rewards patience .",
        "",
    ]
    result = subprocess.run(
        [sys.executable, "-c", _SERVE_SNIPPET, export_dir, json.dumps(examples)],
        capture_output=True, text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    if result.returncode != 0:
        print(result.stderr[-2000:], file=sys.stderr)
        return 1
    served = json.loads(result.stdout.strip().splitlines()[-1])
    keras_probs = keras.ops.convert_to_numpy(
        keras.ops.softmax(model.predict(examples, verbose=0), axis=-1))
    diff = float(np.abs(np.array(served["probabilities"]) - keras_probs).max())
    print("served from a fresh process (tf.saved_model.load):")
    for sentence, probs in zip(examples, served["probabilities"]):
        label = "positive" if probs[1] > probs[0] else "negative"
        print(f"  {label:8s} p(pos)={probs[1]:.3f}  {sentence!r}")
    print(f"largest |served - keras| probability difference: {diff:.2e}")
    print(f"done in {time.time() - start:.0f} s")
    return 0
