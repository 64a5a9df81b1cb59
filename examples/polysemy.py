"""Polysemy, side by side: one vector per word (GloVe, word2vec) against one
per use (ELMo, BERT).

1. "play": GloVe's nearest words to "play" (one vector for every sense), then
   each contextual model's nearest sentences to "play" used as a drama.
2. "bank" in a river sentence and a money sentence: the cosine per layer.
3. With ``--evaluate``: every layer of every model scored on WordNet 3.0
   same-sense / different-sense pairs (ROC AUC; accuracy at a threshold tuned
   on the dev lemmas), the table printed and two plots written
   (``kzoo.analysis.run_polysemy_evaluation``, as ``kzoo polysemy --evaluate``).

Run (any backend; WordNet from ``apt-get install -y wordnet-base``):

    pip install -e '.[demo,analysis]'
    KERAS_BACKEND=jax python examples/polysemy.py
    # an ELMo from examples/pretrain_elmo.py, word2vec from examples/train_word2vec.py
    KERAS_BACKEND=jax python examples/polysemy.py --evaluate \\
        --elmo elmo_enwiki_small_en --word2vec vectors.txt
"""

import argparse

from kzoo.analysis import GLOVE, display_name, load_word_in_context, run_polysemy_evaluation

QUERY = "We went to see the new play at the theatre last night."
CANDIDATES = [
    "The children play football in the park after school.",
    "She will play tennis with her brother tomorrow.",
    "He likes to play the guitar in the evening.",
    "Shakespeare wrote the play in a few weeks.",
    "Let's play a game of chess.",
    "The actors rehearsed the play for a month before it opened.",
    "The orchestra will play a symphony by Brahms.",
    "That was a clever play by the quarterback.",
]
BANK = ("They walked along the bank of the river.",
        "She borrowed money from the bank to buy a house.")


def show_play(models, glove):
    print('GloVe\'s nearest words to "play" (one vector for all its senses):')
    print("  " + ", ".join(w for w, _ in glove.wv.most_similar("play", topn=10)))
    print(f'\nquery: "{QUERY}"')
    for name, wic in models:
        layer = wic.num_layers - 1
        found = wic.nearest_sentences("play", QUERY, CANDIDATES, layer=layer, topn=3)
        print(f"{name}, {wic.layer_names[layer]}: nearest uses of \"play\"")
        for score, sentence, _ in found:
            print(f"  {score:.3f}  {sentence}")


def show_bank(models):
    print(f'\ncosine of "bank" in "{BANK[0]}" vs "{BANK[1]}"')
    for name, wic in models:
        values = wic.similarity("bank", *BANK)
        print(f"  {name}: " + "  ".join(
            f"{layer} {v:.3f}" for layer, v in zip(wic.layer_names, values)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bert", default="minilm_l6_en_uncased",
                        help="a BERT preset or folder")
    parser.add_argument("--elmo", default=None, help="an ELMo preset or AllenNLP folder")
    parser.add_argument("--word2vec", default=None,
                        help="word vectors in word2vec text/binary format")
    parser.add_argument("--evaluate", action="store_true",
                        help="score every layer on WordNet pairs and write the plots")
    parser.add_argument("--output", default="runs/polysemy")
    parser.add_argument("--smoke", action="store_true",
                        help="GloVe and the given models only (no MiniLM by default), "
                             "to check that it runs")
    args = parser.parse_args(argv)
    if args.smoke and args.bert == parser.get_default("bert"):
        args.bert = None

    glove = load_word_in_context(GLOVE)
    static = [(GLOVE, glove)]
    if args.word2vec:
        static.append((display_name(args.word2vec), load_word_in_context(args.word2vec)))
    contextual = [(display_name(name), load_word_in_context(name))
                  for name in (args.elmo, args.bert) if name]
    show_play(contextual, glove)
    show_bank(static + contextual)
    if args.evaluate:
        print()
        run_polysemy_evaluation(static + contextual, args.output)


if __name__ == "__main__":
    main()
