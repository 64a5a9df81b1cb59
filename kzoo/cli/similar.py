"""``kzoo similar``: nearest words and ``a - b + c`` analogies."""

HELP = "nearest words, or the analogy a - b + c, in word vectors"
EXAMPLES = """
  kzoo similar --model runs/w2v --word king --topn 5
  kzoo similar --model vectors.bin --analogy king man woman   # king - man + woman
"""


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a word2vec folder (kzoo pretrain word2vec) or a "
                             "word2vec .txt / .bin or GloVe .txt file, or glove_6b_50d_en")
    parser.add_argument("--word", action="append", default=[],
                        help="a word; repeat for several")
    parser.add_argument("--analogy", nargs=3, metavar=("A", "B", "C"),
                        help="the words nearest to A - B + C")
    parser.add_argument("--topn", type=int, default=10)


def run(args):
    from kzoo.cli.environment import CommandError
    from kzoo.cli.loading import load_word_vectors

    if not args.word and not args.analogy:
        raise CommandError("pass --word WORD or --analogy A B C.")
    wv = load_word_vectors(args.model)
    queries = [(word, [word], []) for word in args.word]
    if args.analogy:
        a, b, c = args.analogy
        queries.append((f"{a} - {b} + {c}", [a, c], [b]))
    for title, positive, negative in queries:
        missing = [w for w in positive + negative if w not in wv]
        if missing:
            raise KeyError(f"not in the vocabulary: {', '.join(missing)}")
        print(f"{title}:")
        for word, score in wv.most_similar(positive=positive, negative=negative,
                                           topn=args.topn):
            print(f"  {score:.3f}  {word}")
    return 0
