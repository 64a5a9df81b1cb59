"""``kzoo evaluate``: the measure that fits the model."""

HELP = ("a fine-tuned task's scores, a language model's perplexity, or word-vector "
        "benchmarks")
EXAMPLES = """
  kzoo evaluate --model runs/sentiment --data test.csv       # accuracy, macro F1
  kzoo evaluate --model runs/sts --data dev.tsv               # Pearson, Spearman
  kzoo evaluate --model runs/cola --data dev.tsv --glue cola  # GLUE's metric: Matthews
  kzoo evaluate --model runs/ner --data test.conll            # entity P / R / F1 (conlleval)
  kzoo evaluate --model runs/squad --data dev.json            # exact match, F1
  kzoo evaluate --model runs/gpt --corpus held_out.txt         # perplexity
  kzoo evaluate --model runs/w2v                                # WordSim, SimLex, analogies
  kzoo evaluate --model vectors.txt --pairs my_pairs.tsv
"""


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a folder from kzoo finetune / pretrain, or word vectors "
                             "(word2vec .txt / .bin, GloVe .txt, glove_6b_50d_en)")
    parser.add_argument("--data", metavar="FILE",
                        help="fine-tuned tasks: a labelled file, as `kzoo finetune` "
                             "reads for the task")
    parser.add_argument("--corpus", nargs="+", metavar="FILE",
                        help="language models: held-out plain-text files")
    parser.add_argument("--pairs", metavar="FILE",
                        help="word vectors: word pairs with human scores (TSV); "
                             "default WordSim-353 and SimLex-999 (gensim's copies)")
    parser.add_argument("--analogies", metavar="FILE",
                        help="word vectors: analogy questions (word2vec's format); "
                             "default the Google analogies (gensim's copy)")
    parser.add_argument("--glue", metavar="TASK",
                        help="classifiers: --data is this GLUE task's split; print "
                             "its official metrics (cola: Matthews correlation; "
                             "mrpc, qqp: accuracy and F1; stsb: Pearson and "
                             "Spearman; sst2, mnli, mnli_matched, mnli_mismatched, "
                             "qnli, rte, wnli: accuracy)")
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

    if args.glue is not None:
        from kzoo.metrics.glue import glue_task

        try:
            args.glue = glue_task(args.glue)
        except ValueError as error:
            raise CommandError(str(error)) from None
    if os.path.isfile(args.model) or family(args.model).word_vectors is not None:
        if args.glue is not None:
            raise CommandError("--glue scores a fine-tuned classifier; "
                               f"{args.model} holds word vectors.")
        return _word_vectors(args)
    cls = saved_task_class(args.model)
    if args.glue is not None and not (cls is not None
                                      and issubclass(cls, kzoo.models.TextClassifier)):
        raise CommandError(f"--glue scores a fine-tuned classifier or regressor; "
                           f"{args.model} holds {cls.__name__ if cls else 'no task'}.")
    shapes = (kzoo.models.TextClassifier, kzoo.models.TokenClassifier,
              kzoo.models.QuestionAnswerer, kzoo.models.MultipleChoice)
    if cls is not None and issubclass(cls, shapes):
        if not args.data:
            raise CommandError(f"a {cls.__name__} is evaluated on --data FILE "
                               "(labelled, as kzoo finetune reads it).")
        return _scores(load_task(args.model), args)
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


_GLUE_NAMES = {"matthews_correlation": "Matthews correlation", "accuracy": "accuracy",
               "f1": "F1", "pearson": "Pearson", "spearmanr": "Spearman"}


def _glue(model, args):
    """Prints the official metrics of the GLUE task ``args.glue``."""
    import numpy as np

    from kzoo import metrics, training
    from kzoo.cli.environment import CommandError

    task = args.glue
    if (task == "stsb") != model.is_regressor:
        raise CommandError(
            f"GLUE's {task} is a {'regression' if task == 'stsb' else 'classification'}"
            f" task, but {args.model} holds a "
            f"{'regressor' if model.is_regressor else 'classifier'}: pass the "
            "GLUE task the model was fine-tuned on.")
    if task == "stsb":
        x, y = training.read_scored_file(args.data)
    else:
        x, y, _ = training.read_labeled_file(args.data, label_names=model.label_names)
    predicted = np.asarray(model.predict(x, batch_size=args.batch_size, verbose=0))
    try:
        scores = metrics.glue_scores(task, y, predicted)
    except ValueError as error:
        raise CommandError(f"{args.data}: {error}") from None
    shown = ", ".join(f"{_GLUE_NAMES[k]} {v:.4f}" for k, v in scores.items())
    print(f"GLUE {task}: {shown} ({len(y)} examples)")
    return 0


def _scores(model, args):
    """Prints the scores the task's benchmarks report."""
    import numpy as np

    import kzoo
    from kzoo import metrics, training

    if args.glue is not None:
        return _glue(model, args)
    if isinstance(model, kzoo.models.TokenClassifier):
        words, tags, _ = training.read_tagged_file(args.data,
                                                   label_names=model.label_names)
        predicted = model.predict_words(words, batch_size=args.batch_size)
        names = model.label_names or [str(i) for i in range(model.num_classes)]
        gold = [[names[t] for t in row] for row in tags]
        guess = [[names[t] if t >= 0 else "O" for t in row] for row in predicted]
        bioes = any(t[:2] in ("S-", "E-") for t in names)
        scores = metrics.entity_scores(gold, guess, scheme="BIOES" if bioes else "IOB2",
                                       mode="conlleval")
        correct = sum(g == p for a, b in zip(gold, guess) for g, p in zip(a, b))
        total = sum(len(row) for row in gold)
        print(f"entity precision {scores['precision']:.4f}, recall "
              f"{scores['recall']:.4f}, F1 {scores['f1']:.4f} (conlleval's counting); "
              f"word accuracy "
              f"{correct / total:.4f} ({len(words)} sentences)")
        return 0
    if isinstance(model, kzoo.models.QuestionAnswerer):
        questions, contexts, answers = training.read_squad_file(args.data)
        found = model.answer(questions, contexts, batch_size=args.batch_size)
        scores = metrics.squad_scores([a["text"] for a in found],
                                      [[g["text"] for g in gold] for gold in answers])
        print(f"exact match {scores['exact_match']:.2f}, F1 {scores['f1']:.2f} "
              f"({len(questions)} questions)")
        return 0
    if isinstance(model, kzoo.models.MultipleChoice):
        contexts, endings, labels = training.read_choices_file(args.data)
        scores = model.predict((contexts, endings), batch_size=args.batch_size,
                               verbose=0)
        result = metrics.classification_scores(labels, scores)
        print(f"accuracy {result['accuracy']:.4f} ({len(labels)} questions)")
        return 0
    if model.is_regressor:
        from kzoo.metrics.glue import correlation_scores

        x, y = training.read_scored_file(args.data)
        predicted = np.asarray(model.predict(x, batch_size=args.batch_size,
                                             verbose=0))[:, 0]
        values = list(correlation_scores(y, predicted).values())
        print(f"Pearson {values[0]:.4f}, Spearman {values[1]:.4f} ({len(y)} examples)")
        return 0
    x, y, _ = training.read_labeled_file(args.data, label_names=model.label_names)
    logits = model.predict(x, batch_size=args.batch_size, verbose=0)
    result = metrics.classification_scores(y, logits, num_classes=model.num_classes)
    print(f"accuracy {result['accuracy']:.4f}, macro F1 {result['macro_f1']:.4f} "
          f"on {len(y)} examples")
    return 0

