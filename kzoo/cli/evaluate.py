"""``kzoo evaluate``: the measure that fits the model."""

HELP = "accuracy (classifiers), perplexity (GPT, ELMo) or word-vector benchmarks"
EXAMPLES = """
  kzoo evaluate --model runs/sentiment --data test.csv       # accuracy
  kzoo evaluate --model runs/gpt --corpus held_out.txt         # perplexity
  kzoo evaluate --model runs/w2v                                # WordSim, SimLex, analogies
  kzoo evaluate --model vectors.txt --pairs my_pairs.tsv
"""


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a folder from kzoo finetune / pretrain, or word vectors "
                             "(word2vec .txt / .bin, GloVe .txt, glove_6b_50d_en)")
    parser.add_argument("--data", metavar="FILE",
                        help="classifiers: a labelled CSV/TSV/JSONL file")
    parser.add_argument("--corpus", nargs="+", metavar="FILE",
                        help="language models: held-out plain-text files")
    parser.add_argument("--pairs", metavar="FILE",
                        help="word vectors: word pairs with human scores (TSV); "
                             "default WordSim-353 and SimLex-999 (gensim's copies)")
    parser.add_argument("--analogies", metavar="FILE",
                        help="word vectors: analogy questions (word2vec's format); "
                             "default the Google analogies (gensim's copy)")
    parser.add_argument("--batch-size", type=int, default=32)


def _word_vectors(args):
    from kzoo.cli.loading import load_word_vectors

    wv = load_word_vectors(args.model)
    pairs = [args.pairs] if args.pairs else None
    analogies = args.analogies
    if not args.pairs and not args.analogies:
        from kzoo.datasets import evaluation_file

        pairs = [evaluation_file("wordsim353.tsv"), evaluation_file("simlex999.txt")]
        analogies = evaluation_file("questions-words.txt")
    print(f"{len(wv):,} words, {wv.vector_size} dimensions")
    for path in pairs or ():
        pearson, spearman, oov = wv.evaluate_word_pairs(path)
        print(f"{path}: Spearman {spearman[0]:.3f}, Pearson {pearson[0]:.3f} "
              f"({oov:.0f}% of pairs out of vocabulary)")
    if analogies:
        accuracy, sections = wv.evaluate_word_analogies(analogies, restrict_vocab=30000)
        answered = len(sections[-1]["correct"]) + len(sections[-1]["incorrect"])
        print(f"{analogies}: analogy accuracy {accuracy:.3f} ({answered} questions "
              "with all four words in the 30k most frequent)")


def run(args):
    import os

    import kzoo
    from kzoo.cli.environment import CommandError
    from kzoo.cli.loading import family, load_task, saved_task_class

    if os.path.isfile(args.model) or family(args.model).word_vectors is not None:
        return _word_vectors(args)
    cls = saved_task_class(args.model)
    if cls is not None and issubclass(cls, kzoo.models.TextClassifier):
        if not args.data:
            raise CommandError("a classifier is evaluated on --data FILE (labelled).")
        return _accuracy(load_task(args.model), args)
    recipe = family(args.model).pretraining
    if (cls is not None and recipe is not None and recipe.evaluate is not None
            and issubclass(cls, recipe.task)):
        if not args.corpus:
            raise CommandError(f"a {cls.__name__} is evaluated on --corpus FILE...")
        from kzoo.training import read_documents

        print(recipe.evaluate(load_task(args.model), read_documents(args.corpus),
                              args.batch_size))
        return 0
    from kzoo.models.family import families

    corpora = [f.pretraining.task.__name__ for f in families()
               if f.pretraining and f.pretraining.evaluate]
    raise CommandError(
        f"kzoo evaluate knows classifiers, the language models {', '.join(corpora)} "
        f"and word vectors; {args.model} holds "
        f"{cls.__name__ if cls else 'no task'}.")


def _accuracy(model, args):
    import json
    import os

    from kzoo.training import read_labeled_file

    names_path = os.path.join(args.model, "labels.json")
    names = None
    if os.path.exists(names_path):
        with open(names_path, encoding="utf-8") as f:
            names = json.load(f)
    x, y, _ = read_labeled_file(args.data, label_names=names)
    result = model.evaluate(x, y, batch_size=args.batch_size, verbose=0,
                            return_dict=True)
    print(f"accuracy {result['accuracy']:.4f} on {len(y)} examples "
          f"(loss {result['loss']:.4f})")
    return 0
