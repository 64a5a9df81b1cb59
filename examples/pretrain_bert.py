"""Pretrains a tiny BERT (masked LM + next sentence prediction) from raw text.

The corpus is the Lee news corpus that ships inside gensim (300 articles,
``kzoo.datasets.lee_background()``), split into sentences on ". ". A WordPiece
vocabulary is trained on the training articles, a 2-layer BERT (hidden size
64) is trained with both of the paper's objectives for a fixed wall-clock
budget, and the masked LM and next sentence accuracies on held-out articles
are printed before and after. The result is saved as a kzoo preset, which
``BertPretrainer.from_preset`` (or ``BertBackbone`` / ``BertClassifier``
``.from_preset``, for fine-tuning) loads back.

Run (any backend; TensorFlow is the fastest on CPU here):

    pip install -e '.[demo]'
    KERAS_BACKEND=tensorflow python examples/pretrain_bert.py --seconds 120

What to expect on 2 CPU cores: in 2 minutes (~700 steps of 32 pairs) the
held-out masked LM accuracy goes from 0 to about 0.11, while next sentence
prediction is still on its chance plateau (loss log 2); in 8 minutes (~3,500
steps) the masked LM reaches about 0.17 and NSP starts to leave chance
(about 0.56). A model this small needs thousands of steps before NSP
learns; the BERT paper trained for a million.
"""

import argparse
import time

import keras
import numpy as np

import kzoo
from kzoo.models.bert.bert_pretrainer import BertPretrainer
from kzoo.models.bert.bert_pretrainer_preprocessor import BertPretrainerPreprocessor
from kzoo.models.bert.bert_pretraining import build_pretrainer, split_sentences, train_tokenizer


def report(name, metrics):
    print(f"{name}: MLM accuracy {metrics['mlm_logits_accuracy']:.3f}, "
          f"NSP accuracy {metrics['nsp_logits_accuracy']:.3f}, "
          f"loss {metrics['loss']:.3f} (MLM {metrics['mlm_logits_loss']:.3f}"
          f" + NSP {metrics['nsp_logits_loss']:.3f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=120,
                        help="training budget in wall-clock seconds")
    parser.add_argument("--output", default="bert_lee_tiny_en_uncased",
                        help="preset folder to write")
    parser.add_argument("--vocabulary-size", type=int, default=3000)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--held-out", type=int, default=30,
                        help="articles kept out of training for evaluation")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="a few articles, a tiny vocabulary, one step: checks it runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.vocabulary_size, args.sequence_length = 0, 200, 16
        args.held_out, args.batch_size = 3, 8
    started = time.time()
    keras.utils.set_random_seed(args.seed)

    # === Data: articles → sentences; a random few articles are held out ===
    articles = kzoo.datasets.lee_background()
    if args.smoke:
        articles = articles[:12]
    documents = [split_sentences(a) for a in articles]
    documents = [d for d in documents if d]
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(documents))
    held_out = [documents[i] for i in order[:args.held_out]]
    train = [documents[i] for i in order[args.held_out:]]
    print(f"{len(train)} training articles ({sum(len(d) for d in train)} "
          f"sentences), {len(held_out)} held out")

    # === WordPiece vocabulary from the training articles ===
    tokenizer = train_tokenizer(train, args.vocabulary_size)
    print(f"WordPiece vocabulary: {tokenizer.vocabulary_size()} tokens")

    # === Model ===
    model = build_pretrainer(
        tokenizer, args.sequence_length, num_layers=2, num_heads=2, hidden_dim=64,
        intermediate_dim=256, dropout=args.dropout, learning_rate=args.learning_rate,
        seed=args.seed)
    print(f"BertPretrainer: {model.count_params():,} parameters")

    # The same held-out pairs and masks at every evaluation (cached), made
    # by a preprocessor with a stream of its own.
    evaluation = BertPretrainerPreprocessor(
        tokenizer, sequence_length=args.sequence_length, seed=args.seed + 100
    ).dataset_from_documents(held_out, batch_size=64, shuffle=False).cache()
    labels = np.concatenate([keras.ops.convert_to_numpy(y["nsp_logits"])
                             for _, y, _ in evaluation])
    print(f"held-out pairs: {len(labels)}, share of random next sentences "
          f"{labels.mean():.3f}")
    report("before training", model.evaluate(evaluation, verbose=0, return_dict=True))

    # === Pretraining: raw documents straight into fit ===
    train_started = time.time()
    budget = kzoo.callbacks.TimeBudget(args.seconds)
    history = model.fit(train, batch_size=args.batch_size, epochs=10_000,
                        callbacks=[budget], verbose=0)
    print(f"trained {budget.steps} steps ({len(history.epoch)} epochs) in "
          f"{time.time() - train_started:.0f} s (last epoch's training loss "
          f"{history.history['loss'][-1]:.3f})")
    report("after training (held out)",
           model.evaluate(evaluation, verbose=0, return_dict=True))

    # === Save and reload ===
    model.save_to_preset(args.output)
    restored = BertPretrainer.from_preset(args.output)
    report("reloaded preset (held out)",
           restored.evaluate(evaluation, verbose=0, return_dict=True))
    print(f"saved the preset to {args.output}; total wall time "
          f"{time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
