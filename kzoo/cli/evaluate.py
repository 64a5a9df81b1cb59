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

    if os.path.isfile(args.model) or family(args.model) == "word2vec":
        return _word_vectors(args)
    cls = saved_task_class(args.model)
    if cls is not None and issubclass(cls, kzoo.models.TextClassifier):
        if not args.data:
            raise CommandError("a classifier is evaluated on --data FILE (labelled).")
        from kzoo.training import read_labeled_file

        names_path = os.path.join(args.model, "labels.json")
        names = None
        if os.path.exists(names_path):
            import json

            with open(names_path, encoding="utf-8") as f:
                names = json.load(f)
        x, y, _ = read_labeled_file(args.data, label_names=names)
        model = load_task(args.model)
        result = model.evaluate(x, y, batch_size=args.batch_size, verbose=0,
                                return_dict=True)
        print(f"accuracy {result['accuracy']:.4f} on {len(y)} examples "
              f"(loss {result['loss']:.4f})")
        return 0
    lms = (kzoo.models.GPTCausalLM, kzoo.models.ElmoLanguageModel)
    if cls is not None and issubclass(cls, lms):
        if not args.corpus:
            raise CommandError("a language model is evaluated on --corpus FILE...")
        return _perplexity(load_task(args.model), args)
    raise CommandError(
        f"kzoo evaluate knows classifiers, GPT and ELMo language models and word "
        f"vectors; {args.model} holds "
        f"{cls.__name__ if cls else 'no task'}.")


def _perplexity(model, args):
    import kzoo
    from kzoo.training import read_documents

    documents = read_documents(args.corpus)
    if isinstance(model, kzoo.models.GPTCausalLM):
        from kzoo.training.gpt_pretraining import perplexity, token_blocks

        length = model.preprocessor.sequence_length
        blocks, tokens = token_blocks(model.preprocessor.tokenizer,
                                      ["\n".join(d) for d in documents], length)
        ppl, loss = perplexity(model, blocks, args.batch_size)
        print(f"perplexity {ppl:.2f} per BPE token (loss {loss:.4f}; {tokens:,} tokens)")
        return 0
    from kzoo.training.elmo_pretraining import sentences_of

    sentences = sentences_of(["\n".join(d) for d in documents],
                             model.preprocessor.sequence_length - 2)
    result = model.evaluate(sentences, batch_size=args.batch_size, verbose=0,
                            return_dict=True)
    print(f"perplexity forward {result['forward_perplexity']:.2f}, backward "
          f"{result['backward_perplexity']:.2f} ({len(sentences):,} sentences)")
    return 0
