"""ELMo at the input and the output of a task BiLSTM, in a small classifier.

The recipe of the ELMo paper for its sentiment model (the biattentive
classification network) and for SQuAD and SNLI: the pretrained biLM, frozen,
gives two ELMo vectors per token, each with its own task-specific
``ScalarMix`` (softmax weights ``s`` and scale ``gamma``, trained with the
task) and dropout 0.5 (``ElmoEmbedding(num_output_representations=2,
dropout=0.5)``, AllenNLP's ``Elmo`` options). The first is concatenated to the
task's own word embeddings at the BiLSTM's input, the second to the BiLSTM's
outputs; a masked average over the tokens then feeds the classifier. Here the
task is the 200 Pang & Lee movie-review sentences that ship with gensim (160
to train, 40 held out); two models are trained with ``fit`` on the same
``tf.data`` pipeline, one with word embeddings only and one with ELMo at the
input and output, and their held-out accuracies and the learned mix weights
are printed. Masks flow from both embeddings through the BiLSTM.

The biLM comes from ``--preset``: a kzoo preset (e.g. the one
``examples/pretrain_elmo.py`` saves) or an AllenNLP ELMo folder
(``options.json`` + weights hdf5). With ``--allennlp-fixture`` it uses the
tiny real ELMo of AllenNLP's tests (fetched with pip on first use). Run:

    KERAS_BACKEND=jax python examples/pretrain_elmo.py --seconds 600
    KERAS_BACKEND=jax python examples/elmo_sentiment.py --preset elmo_enwiki_small_en

With 40 held-out sentences one sentence is 2.5 points: read the accuracies
as a demonstration that the pieces fit together, not as a benchmark.
"""

import argparse

import keras
import numpy as np
import tensorflow as tf

import kzoo
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding
from kzoo.preprocessing import CharacterIds
from kzoo.tokenizers import WordTokenizer, compute_word_vocabulary


def build(embedding, vocabulary_size, word_dim=32, units=32):
    """The task model; ``embedding`` (an ``ElmoEmbedding`` with two
    representations, or None) adds ELMo at the BiLSTM's input and output."""
    character_ids = keras.Input((None, 50), dtype="int32", name="character_ids")
    word_ids = keras.Input((None,), dtype="int32", name="word_ids")
    x = keras.layers.Embedding(vocabulary_size, word_dim, mask_zero=True,
                               name="word_embedding")(word_ids)
    if embedding is not None:
        elmo_input, elmo_output = embedding(character_ids)
        x = keras.layers.Concatenate()([x, elmo_input])
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True))(x)
    if embedding is not None:
        x = keras.layers.Concatenate()([x, elmo_output])
    x = keras.layers.GlobalAveragePooling1D()(x)  # over the real tokens (masked)
    x = keras.layers.Dropout(0.3)(x)
    outputs = keras.layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model({"character_ids": character_ids, "word_ids": word_ids}, outputs)
    model.compile(keras.optimizers.Adam(3e-3), "binary_crossentropy", metrics=["accuracy"])
    return model


def tiny_elmo_preset(directory):
    """An untrained two-layer biLM with a handful of weights, as a preset."""
    from kzoo.models.elmo.elmo_backbone import ElmoBackbone

    ElmoBackbone(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
                 character_dim=4).save_to_preset(directory)
    return directory


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="elmo_enwiki_small_en")
    parser.add_argument("--allennlp-fixture", action="store_true")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--sequence-length", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", metavar="DIR", default=None,
                        help="an untrained tiny biLM saved in DIR, 48 sentences, one "
                             "epoch: checks that it runs")
    args = parser.parse_args(argv)

    texts, labels = kzoo.datasets.pang_lee_polarity(seed=args.seed)
    labels = np.array(labels, "float32")
    train, test = slice(0, 160), slice(160, 200)
    if args.smoke:
        train, test, args.epochs, args.sequence_length = slice(0, 32), slice(32, 48), 1, 12
        args.preset = tiny_elmo_preset(args.smoke)

    vocabulary, _ = compute_word_vocabulary(
        texts[train], min_count=1, special_tokens=("[PAD]", "[UNK]"), lowercase=True)
    words = WordTokenizer(vocabulary=vocabulary, lowercase=True, pad_token="[PAD]",
                          sequence_length=args.sequence_length)
    chars = CharacterIds(sequence_length=args.sequence_length)

    def features(text, label):
        return {"character_ids": chars(text)["character_ids"], "word_ids": words(text)}, label

    def dataset(part, shuffle):
        ds = tf.data.Dataset.from_tensor_slices((texts[part], labels[part]))
        if shuffle:
            ds = ds.shuffle(160, seed=args.seed)
        return ds.batch(16).map(features)

    if args.allennlp_fixture:
        from kzoo.testing.allennlp_fixtures import allennlp_elmo_fixture

        args.preset = str(allennlp_elmo_fixture())
    print(f"biLM: {args.preset}; {len(vocabulary)} words in the task vocabulary")
    for name, use_elmo in (("word embeddings", False),
                           ("word embeddings + ELMo (input and output)", True)):
        keras.utils.set_random_seed(args.seed)
        embedding = None
        if use_elmo:
            embedding = ElmoEmbedding.from_preset(
                args.preset, num_output_representations=2, dropout=0.5)
        model = build(embedding, len(vocabulary))
        model.fit(dataset(train, True), epochs=args.epochs, verbose=0, shuffle=False)
        _, accuracy = model.evaluate(dataset(test, False), verbose=0)
        print(f"{name:<42} held-out accuracy {accuracy:.3f}")
        if embedding is not None:
            for place, mix in zip(("input", "output"), embedding.scalar_mixes):
                weights = keras.ops.convert_to_numpy(keras.ops.softmax(mix.scalar_weights))
                print(f"  ELMo at the {place}: mix weights "
                      f"{[round(float(w), 3) for w in weights]}, "
                      f"gamma {float(keras.ops.convert_to_numpy(mix.gamma)):.3f}")


if __name__ == "__main__":
    main()
