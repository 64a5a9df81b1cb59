"""Train word2vec with kzoo and with gensim on the same text, side by side.

The corpus is real text that ships inside gensim: its English Wikipedia
excerpt (106 articles) and the Lee news corpus (300 articles), lowercased and
split into words (letters, digits, inner apostrophes), one paragraph a line,
written once to a text file that both libraries stream. Both train the
same model (skip-gram or CBOW, negative sampling) with the same
hyperparameters, then both sets of vectors are scored on WordSim-353,
SimLex-999 (Spearman) and the Google analogies (30k most frequent words) by
the same evaluation code (kzoo's WordVectors, equal to gensim's).

    KERAS_BACKEND=jax .venv/bin/python examples/train_word2vec.py
    KERAS_BACKEND=torch .venv/bin/python examples/train_word2vec.py --cbow --epochs 5

``--save vectors.txt`` writes kzoo's vectors in word2vec's text format (e.g.
for ``kzoo polysemy --evaluate --model vectors.txt``).
"""

import argparse
import os
import re
import sys
import time

WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+")


def write_corpus(path, max_lines=None):
    """gensim's Wikipedia excerpt + Lee corpus as one tokenized paragraph a
    line (the first ``max_lines``); returns the number of words. Written
    once, then reused."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return sum(len(line.split()) for line in f)
    from kzoo.datasets import enwiki_excerpt, lee_background

    words = lines = 0
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        for text in enwiki_excerpt() + lee_background():
            for paragraph in text.splitlines():
                tokens = WORD.findall(paragraph.lower())
                if len(tokens) > 1 and lines != max_lines:
                    f.write(" ".join(tokens) + "\n")
                    words += len(tokens)
                    lines += 1
    os.replace(path + ".tmp", path)
    return words


def evaluate(wv):
    """WordSim-353 and SimLex-999 Spearman, analogy accuracy (top 30k words)."""
    from kzoo.datasets import evaluation_file

    wordsim = wv.evaluate_word_pairs(evaluation_file("wordsim353.tsv"))
    simlex = wv.evaluate_word_pairs(evaluation_file("simlex999.txt"))
    analogy, sections = wv.evaluate_word_analogies(
        evaluation_file("questions-words.txt"), restrict_vocab=30000)
    answered = len(sections[-1]["correct"]) + len(sections[-1]["incorrect"])
    return {"wordsim353": wordsim[1][0], "wordsim_oov_pct": wordsim[2],
            "simlex999": simlex[1][0], "analogy": analogy,
            "analogy_answered": answered}


def train_kzoo(path, args):
    import kzoo

    cls = kzoo.models.Word2VecCBOW if args.cbow else kzoo.models.Word2VecSkipGram
    start = time.perf_counter()
    model = cls.from_corpus(path, hidden_dim=args.dim, min_count=args.min_count,
                            window=args.window, negative=args.negative,
                            sample=args.sample, seed=args.seed)
    vocab_seconds = time.perf_counter() - start
    model.compile(alpha=args.alpha)
    start = time.perf_counter()
    history = model.fit(path, epochs=args.epochs, batch_size=args.batch_size,
                        verbose=args.verbose)
    seconds = time.perf_counter() - start
    return model.wv, {"vocab_s": vocab_seconds, "train_s": seconds,
                      "loss": history.history["loss"]}


def gensim_model(path, args):
    """gensim's Word2Vec with kzoo's hyperparameters, its vocabulary built."""
    from gensim.models import Word2Vec
    from gensim.models.word2vec import LineSentence

    model = Word2Vec(vector_size=args.dim, window=args.window, min_count=args.min_count,
                     sample=args.sample, negative=args.negative, hs=0,
                     sg=0 if args.cbow else 1, alpha=args.alpha,
                     workers=args.workers, seed=args.seed)
    model.build_vocab(LineSentence(path))
    return model


def train_gensim(path, args):
    from gensim.models.word2vec import LineSentence

    from kzoo.models import WordVectors

    start = time.perf_counter()
    model = gensim_model(path, args)
    vocab_seconds = time.perf_counter() - start
    start = time.perf_counter()
    model.train(LineSentence(path), total_examples=model.corpus_count,
                epochs=args.epochs)
    seconds = time.perf_counter() - start
    kv = model.wv
    return WordVectors(kv.vectors, kv.index_to_key), {
        "vocab_s": vocab_seconds, "train_s": seconds}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default="runs/word2vec/enwiki_lee.txt")
    parser.add_argument("--cbow", action="store_true", help="CBOW (default skip-gram)")
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--negative", type=int, default=5)
    parser.add_argument("--sample", type=float, default=1e-3)
    parser.add_argument("--min-count", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--alpha", type=float, default=0.025)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="kzoo: examples per step (default: fit's, 16384 on a "
                             "corpus this size)")
    parser.add_argument("--workers", type=int, default=2, help="gensim threads")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument("--only", choices=("kzoo", "gensim"))
    parser.add_argument("--save", default=None,
                        help="write kzoo's vectors here (word2vec text format)")
    parser.add_argument("--smoke", action="store_true",
                        help="200 paragraphs, 16 dimensions, one epoch: checks it runs "
                             "(pass a --corpus path of its own)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.dim, args.epochs, args.min_count, args.batch_size = 16, 1, 2, 512

    words = write_corpus(args.corpus, max_lines=200 if args.smoke else None)
    import keras

    print(f"corpus: {args.corpus}, {words:,} words; "
          f"{'CBOW' if args.cbow else 'skip-gram'} dim {args.dim}, window "
          f"{args.window}, negative {args.negative}, sample {args.sample}, "
          f"min_count {args.min_count}, {args.epochs} epochs, alpha {args.alpha}")
    rows = []
    if args.only != "gensim":
        wv, info = train_kzoo(args.corpus, args)
        rows.append((f"kzoo ({keras.config.backend()}, batch {args.batch_size or 'auto'})",
                     wv, info))
        if args.save:
            wv.save_word2vec_format(args.save)
            print(f"saved kzoo's vectors to {args.save}")
    if args.only != "kzoo":
        wv, info = train_gensim(args.corpus, args)
        rows.append((f"gensim {__import__('gensim').__version__} "
                     f"(workers={args.workers})", wv, info))
    print()
    print(f"| {'model':<34} | vocab | words/s | WordSim-353 | SimLex-999 | analogy |")
    print(f"|{'-' * 36}|------:|--------:|------------:|-----------:|--------:|")
    for name, wv, info in rows:
        scores = evaluate(wv)
        speed = words * args.epochs / info["train_s"]
        print(f"| {name:<34} | {len(wv):>5} | {speed:>7,.0f} | "
              f"{scores['wordsim353']:>11.3f} | {scores['simlex999']:>10.3f} | "
              f"{scores['analogy']:>7.3f} |")
    print(f"\nanalogies answered (all four words in the top 30k): "
          f"{scores['analogy_answered']}; WordSim-353 pairs out of vocabulary: "
          f"{scores['wordsim_oov_pct']:.0f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
