"""Pretrains a small ELMo (bidirectional LM) on gensim's Wikipedia excerpt.

The corpus is the English Wikipedia excerpt that ships inside gensim (106
articles, ~480k words, ``kzoo.datasets.enwiki_excerpt()``), split into
lines and sentences; the last articles are held out. A word vocabulary (the
softmax targets; the inputs are characters) is built from the training
articles, a small ELMo (char CNN with 256 filters, 1 highway layer, 2 x 512
LSTM cells with 128-wide projections) is trained with the forward and
backward language model objectives for a wall-clock budget, and the
held-out perplexity of each direction is printed before and after. The
model is saved as a kzoo preset (``ElmoLanguageModel.from_preset``,
``ElmoBackbone.from_preset``, ``ElmoEmbedder.from_preset`` load it).

Last, the "bank" check: the cosine similarity of the vectors of "bank" in
a river sentence and in a money sentence, for each layer. The token layer
is context-free (similarity 1.0); the LSTM layers tell the two uses apart
as far as the training allowed.

Run (any backend):

    pip install -e '.[demo]'
    KERAS_BACKEND=jax python examples/pretrain_elmo.py --seconds 600
    # a larger vocabulary, trained with a sampled softmax (bilm-tf's way):
    KERAS_BACKEND=jax python examples/pretrain_elmo.py --vocabulary-size 50000 \
        --num-sampled 2048

Pass ``--preset DIR`` to skip training and only run the "bank" check on a
saved preset or an AllenNLP ELMo folder (``options.json`` + weights hdf5).
"""

import argparse
import random
import time

import keras

import kzoo
from kzoo.analysis import word_in_context
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_pretraining import (
    build_language_model,
    sentences_of,
    train_tokenizer,
)

BANK = ("They walked along the bank of the river .",
        "She borrowed money from the bank to buy a house .")


def report_bank(backbone):
    wic = word_in_context(backbone)
    print('cosine similarity of "bank" (river sentence vs money sentence):')
    for name, value in zip(wic.layer_names, wic.similarity("bank", *BANK)):
        print(f"  {name:<13} {value:.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=600, help="training budget")
    parser.add_argument("--output", default="elmo_enwiki_small_en")
    parser.add_argument("--preset", default=None,
                        help="skip training: run the bank check on this preset")
    parser.add_argument("--vocabulary-size", type=int, default=20000)
    parser.add_argument("--num-sampled", type=int, default=None,
                        help="train with a sampled softmax of this many negatives "
                             "(held-out perplexity stays the full softmax)")
    parser.add_argument("--sequence-length", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--held-out", type=int, default=6, help="articles")
    parser.add_argument("--learning-rate", type=float, default=2e-3,
                        help="Adam's (full softmax)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="a few articles, a tiny biLM, one step: checks it runs")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seconds, args.vocabulary_size, args.sequence_length = 0, 300, 12
        args.held_out, args.batch_size = 1, 8
    keras.utils.set_random_seed(args.seed)

    if args.preset:
        report_bank(ElmoBackbone.from_preset(args.preset))
        return

    articles = kzoo.datasets.enwiki_excerpt()
    if args.smoke:
        articles = [a[:3000] for a in articles[:3]]
    train = sentences_of(articles[:-args.held_out], args.sequence_length - 2)
    test = sentences_of(articles[-args.held_out:], args.sequence_length - 2)
    random.Random(args.seed).shuffle(train)
    test = test[:1000]
    tokenizer = train_tokenizer(train, args.vocabulary_size)
    print(f"data: {len(train)} training sentences "
          f"({sum(len(s.split()) for s in train)} words), {len(test)} held-out "
          f"sentences; vocabulary {tokenizer.vocabulary_size()} words (the softmax targets)")

    # Sampled: the model's default optimizer, bilm-tf's Adagrad(0.2).
    model = build_language_model(
        tokenizer, args.sequence_length, hidden_dim=64 if args.smoke else 512,
        projection_dim=16 if args.smoke else 128, num_sampled=args.num_sampled,
        learning_rate=args.learning_rate, seed=args.seed)
    backbone = model.backbone
    softmax = (f"sampled softmax, {args.num_sampled} negatives per batch"
               if args.num_sampled else "full softmax")
    print(f"model: ElmoLanguageModel, {backbone.count_params():,} biLM parameters "
          f"+ {model.count_params() - backbone.count_params():,} in the softmax "
          f"(trained with the {softmax})")

    def evaluate(when):
        result = model.evaluate(test, batch_size=args.batch_size, verbose=0,
                                return_dict=True)
        print(f"held-out perplexity {when}: forward {result['forward_perplexity']:.1f}, "
              f"backward {result['backward_perplexity']:.1f}")

    evaluate("before training")
    budget = kzoo.callbacks.TimeBudget(args.seconds)
    start = time.time()
    model.fit(train, batch_size=args.batch_size, epochs=1000, verbose=2,
              callbacks=[budget])
    took = time.time() - start
    print(f"trained {budget.steps} steps of {args.batch_size} sentences in {took:.0f} s")
    evaluate("after training")
    model.save_to_preset(args.output)
    print(f"saved the preset to {args.output}")
    report_bank(backbone)


if __name__ == "__main__":
    main()
