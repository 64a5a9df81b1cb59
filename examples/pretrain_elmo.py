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
import re
import time

import keras

import kzoo
from kzoo.analysis import ElmoWordInContext
from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_language_model import ElmoLanguageModel
from kzoo.models.elmo.elmo_language_model_preprocessor import ElmoLanguageModelPreprocessor
from kzoo.tokenizers import WordTokenizer, compute_word_vocabulary

BANK = ("They walked along the bank of the river .",
        "She borrowed money from the bank to buy a house .")


def sentences_of(articles, max_words):
    """Lines split into sentences on '. ', '? ', '! '; 3 to max_words words."""
    out = []
    for article in articles:
        for line in article.split("\n"):
            for sentence in re.split(r"(?<=[.?!])\s+", line):
                words = sentence.split()
                if 3 <= len(words):
                    out.append(" ".join(words[:max_words]))
    return out


def report_bank(backbone):
    wic = ElmoWordInContext(backbone)
    print('cosine similarity of "bank" (river sentence vs money sentence):')
    for name, value in zip(wic.layer_names, wic.similarity("bank", *BANK)):
        print(f"  {name:<13} {value:.3f}")


def main():
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
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)

    if args.preset:
        report_bank(ElmoBackbone.from_preset(args.preset))
        return

    articles = kzoo.datasets.enwiki_excerpt()
    train = sentences_of(articles[:-args.held_out], args.sequence_length - 2)
    test = sentences_of(articles[-args.held_out:], args.sequence_length - 2)
    random.Random(args.seed).shuffle(train)
    test = test[:1000]
    vocabulary, counts = compute_word_vocabulary(
        train, max_size=args.vocabulary_size, special_tokens=("<UNK>", "<S>", "</S>"),
        oov_token="<UNK>")
    tokenizer = WordTokenizer(vocabulary=vocabulary, counts=counts, oov_token="<UNK>")
    print(f"data: {len(train)} training sentences "
          f"({sum(len(s.split()) for s in train)} words), {len(test)} held-out "
          f"sentences; vocabulary {len(vocabulary)} words (the softmax targets)")

    backbone = ElmoBackbone(
        num_layers=2, hidden_dim=512, projection_dim=128,
        filters=((1, 16), (2, 16), (3, 32), (4, 64), (5, 128)),
        num_highway_layers=1, character_dim=16, dropout=0.1,
    )
    preprocessor = ElmoLanguageModelPreprocessor(
        tokenizer, sequence_length=args.sequence_length)
    model = ElmoLanguageModel(backbone, preprocessor=preprocessor,
                              num_sampled=args.num_sampled, seed=args.seed)
    if not args.num_sampled:  # sampled: the model's default, bilm-tf's Adagrad(0.2)
        model.compile(optimizer=keras.optimizers.Adam(args.learning_rate, clipnorm=10.0))
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
