"""The ``kzoo`` command.

    kzoo demo      fine-tune BERT (MiniLM-L6) on real movie-review sentences,
                   export a SavedModel, and serve it from a fresh process
    kzoo presets   list the registered presets
    kzoo polysemy  a word's similarity across two sentences per layer, or
                   (--evaluate) every layer scored on WordNet sense pairs
"""

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _presets(args):
    import kzoo
    from kzoo.presets.preset_registry import registered_presets

    for name, entry in sorted(registered_presets().items()):
        if args.family and entry.get("family") != args.family:
            continue
        print(f"{name:28s} {entry.get('family', ''):9s} {entry.get('description', '')}")
    return 0


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


def _demo(args):
    import json
    import subprocess

    import keras
    import numpy as np

    import kzoo
    from kzoo.datasets import pang_lee_polarity

    start = time.time()
    print(f"kzoo demo on the {keras.config.backend()} backend "
          f"(set KERAS_BACKEND to change it)")
    texts, labels = pang_lee_polarity()
    order = np.random.default_rng(args.seed).permutation(len(texts))
    texts = [texts[i] for i in order]
    labels = np.array([labels[i] for i in order])
    held_out = int(round(len(texts) * args.held_out))
    train_x, train_y = texts[held_out:], labels[held_out:]
    test_x, test_y = texts[:held_out], labels[:held_out]
    print(f"data: Pang & Lee movie-review sentences (gensim's copy): "
          f"{len(train_x)} to train on, {len(test_x)} held out")

    keras.utils.set_random_seed(args.seed)
    model = kzoo.BertClassifier.from_preset(
        args.preset, num_classes=2, sequence_length=args.sequence_length
    )
    model.compile(optimizer=keras.optimizers.AdamW(args.learning_rate,
                                                   weight_decay=0.01))
    print(f"model: BertClassifier on {args.preset} "
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


EVALUATION_MODELS = ("glove_6b_50d", "minilm_l6_en_uncased")


def _polysemy(args):
    from kzoo.analysis import (
        WordNetNotFoundError,
        display_name,
        load_word_in_context,
        run_polysemy_evaluation,
    )

    try:
        if args.evaluate:
            if args.word or args.sentences:
                raise ValueError("--evaluate takes no --word or sentences.")
            run_polysemy_evaluation(
                args.model or list(EVALUATION_MODELS), args.output,
                wordnet=args.wordnet, max_pairs_per_lemma=args.max_pairs_per_lemma,
                same_form=args.same_form, seed=args.seed)
            return 0
        if not args.word or len(args.sentences) != 2:
            raise ValueError('pass --word WORD and two sentences ("..." "..."), '
                             "or --evaluate.")
        for name in args.model or ["minilm_l6_en_uncased"]:
            wic = load_word_in_context(name)
            index = args.index
            if index is not None:
                if len(index) > 2:
                    raise ValueError("--index takes one value, or one per sentence.")
                index = index[0] if len(index) == 1 else tuple(index)
            values = wic.similarity(args.word, *args.sentences, index=index)
            for layer, value in zip(wic.layer_names, values):
                print(f"{display_name(name)}  {layer:<14} cosine {value:.3f}")
    except (ValueError, KeyError, WordNetNotFoundError) as exc:
        print(f"kzoo polysemy: error: {exc}", file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kzoo", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="fine-tune, export and serve BERT (MiniLM-L6)")
    demo.add_argument("--preset", default="minilm_l6_en_uncased")
    demo.add_argument("--epochs", type=int, default=4)
    demo.add_argument("--batch-size", type=int, default=16)
    demo.add_argument("--sequence-length", type=int, default=64)
    demo.add_argument("--learning-rate", type=float, default=5e-5)
    demo.add_argument("--held-out", type=float, default=0.2)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--output", default="runs/demo")
    demo.set_defaults(fn=_demo)

    presets = sub.add_parser("presets", help="list the registered presets")
    presets.add_argument("--family", default=None)
    presets.set_defaults(fn=_presets)

    polysemy = sub.add_parser(
        "polysemy", help="a word's vectors in context, per layer (word2vec, ELMo, BERT)")
    polysemy.add_argument("sentences", nargs="*", help="two sentences holding --word")
    polysemy.add_argument("--word", help="the target word, as written in the sentences")
    polysemy.add_argument("--index", type=int, nargs="+", default=None,
                          help="which occurrence of the word (0 = first) if it occurs "
                               "more than once; one value, or one per sentence")
    polysemy.add_argument("--model", action="append", default=None,
                          help="glove_6b_50d, a word-vector file, or a BERT / ELMo preset "
                               "or folder; repeat for several (default: "
                               "minilm_l6_en_uncased; with --evaluate "
                               f"{' and '.join(EVALUATION_MODELS)})")
    polysemy.add_argument("--evaluate", action="store_true",
                          help="score every layer on WordNet 3.0 sense pairs, print the "
                               "table and write the plots")
    polysemy.add_argument("--output", default="runs/polysemy", help="folder for the plots")
    polysemy.add_argument("--wordnet", default=None,
                          help="WordNet database folder (default /usr/share/wordnet)")
    polysemy.add_argument("--max-pairs-per-lemma", type=int, default=2)
    polysemy.add_argument("--same-form", action="store_true",
                          help="only pair uses where the word is written the same")
    polysemy.add_argument("--seed", type=int, default=0)
    polysemy.set_defaults(fn=_polysemy)

    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
