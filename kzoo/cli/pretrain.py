"""``kzoo pretrain``: train word2vec, ELMo, GPT or BERT from raw text files."""

import os

HELP = "pretrain word2vec, ELMo, GPT or BERT on text files; writes a preset folder"
EXAMPLES = """
  kzoo pretrain gpt --corpus books.txt --output runs/gpt --epochs 3
  kzoo pretrain word2vec --corpus a.txt b.txt --output runs/w2v --hidden-dim 100
  kzoo pretrain bert --corpus wiki.txt --output runs/bert --num-layers 2

The corpus is plain text, a sentence or paragraph a line; a blank line (or
a file's end) ends a document. Curves (curves.png), TensorBoard logs and a
checkpoint after every epoch go to OUTPUT.run/; run the same command again
after a kill or Ctrl-C and it resumes from the last finished epoch.
"""

FAMILIES = ("word2vec", "elmo", "gpt", "bert")
# Per family: (batch size, learning rate, vocabulary size, sequence length).
DEFAULTS = {"word2vec": (None, 0.025, None, None), "elmo": (32, 2e-3, 20000, 32),
            "gpt": (16, 1e-3, 4096, 128), "bert": (32, 1e-3, 3000, 64)}


def add_arguments(parser):
    parser.add_argument("family", choices=FAMILIES)
    parser.add_argument("--corpus", nargs="+", required=True, metavar="FILE",
                        help="plain-text files")
    parser.add_argument("--output", required=True, help="the preset folder to write")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="word2vec: pairs per step (fit's default: 16384 on a "
                             "big corpus, else 4096); others: sequences "
                             "(elmo 32, gpt 16, bert 32)")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="word2vec: alpha (0.025); elmo 2e-3, gpt 1e-3, bert 1e-3")
    size = parser.add_argument_group("model size")
    size.add_argument("--hidden-dim", type=int, default=None,
                      help="word2vec 100, elmo 512 (LSTM cells), gpt 128, bert 64")
    size.add_argument("--num-layers", type=int, default=None, help="default 2 (gpt 4)")
    size.add_argument("--num-heads", type=int, default=None, help="gpt 4, bert 2")
    size.add_argument("--projection-dim", type=int, default=128, help="elmo")
    size.add_argument("--vocabulary-size", type=int, default=None,
                      help="elmo 20000 words, gpt 4096 BPE tokens, bert 3000 pieces")
    size.add_argument("--sequence-length", type=int, default=None,
                      help="elmo 32, gpt 128, bert 64")
    size.add_argument("--dropout", type=float, default=0.1)
    w2v = parser.add_argument_group("word2vec")
    w2v.add_argument("--cbow", action="store_true", help="CBOW (default skip-gram)")
    w2v.add_argument("--window", type=int, default=5)
    w2v.add_argument("--negative", type=int, default=5)
    w2v.add_argument("--min-count", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)


def _word2vec(documents, args):
    import kzoo

    lines = [line for document in documents for line in document]
    cls = kzoo.models.Word2VecCBOW if args.cbow else kzoo.models.Word2VecSkipGram
    model = cls.from_corpus(lines, hidden_dim=args.hidden_dim or 100,
                            min_count=args.min_count, window=args.window,
                            negative=args.negative, seed=args.seed)
    model.compile(alpha=args.learning_rate)
    print(f"word2vec ({'CBOW' if args.cbow else 'skip-gram'}): "
          f"{model.preprocessor.tokenizer.vocabulary_size():,} words in the vocabulary")
    # A streamed corpus, read in order: one fit from the resumed epoch.
    return model, {"data": lines, "batch_size": args.batch_size}


def _gpt(documents, args):
    from kzoo.training import gpt_pretraining, shuffled_epoch

    articles = ["\n".join(document) for document in documents]
    tokenizer = gpt_pretraining.train_tokenizer(articles, args.vocabulary_size)
    blocks, tokens = gpt_pretraining.token_blocks(tokenizer, articles,
                                                  args.sequence_length)
    model = gpt_pretraining.build_causal_lm(
        tokenizer, args.sequence_length, num_layers=args.num_layers or 4,
        hidden_dim=args.hidden_dim or 128, num_heads=args.num_heads or 4,
        dropout=args.dropout, learning_rate=args.learning_rate)
    print(f"GPT: {tokenizer.vocabulary_size():,} BPE tokens; {tokens:,} training "
          f"tokens in {len(blocks):,} blocks of {args.sequence_length}")
    data = gpt_pretraining.as_inputs(blocks)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        data, epoch, args.batch_size, args.seed)}


def _bert(documents, args):
    import numpy as np

    from kzoo.training import bert_pretraining

    documents = [[s for line in d for s in bert_pretraining.split_sentences(line)]
                 for d in documents]
    documents = [d for d in documents if len(d) > 1]
    if not documents:
        raise ValueError("BERT's next-sentence task needs documents of two or more "
                         "sentences; the corpus has none.")
    tokenizer = bert_pretraining.train_tokenizer(documents, args.vocabulary_size)
    model = bert_pretraining.build_pretrainer(
        tokenizer, args.sequence_length, num_layers=args.num_layers or 2,
        num_heads=args.num_heads or 2, hidden_dim=args.hidden_dim or 64,
        dropout=args.dropout, learning_rate=args.learning_rate, seed=args.seed)
    print(f"BERT: {tokenizer.vocabulary_size():,} word pieces; {len(documents):,} "
          f"documents, {sum(len(d) for d in documents):,} sentences")

    def data_for_epoch(epoch):
        order = np.random.default_rng([args.seed, epoch]).permutation(len(documents))
        return model.preprocessor.dataset_from_documents(
            [documents[i] for i in order], batch_size=args.batch_size, shuffle=False)

    return model, {"data_for_epoch": data_for_epoch}


def _elmo(documents, args):
    import numpy as np

    from kzoo.training import elmo_pretraining, shuffled_epoch

    sentences = elmo_pretraining.sentences_of(
        ["\n".join(d) for d in documents], args.sequence_length - 2)
    if not sentences:
        raise ValueError("the corpus has no sentence of 3 words or more.")
    tokenizer = elmo_pretraining.train_tokenizer(sentences, args.vocabulary_size)
    model = elmo_pretraining.build_language_model(
        tokenizer, args.sequence_length, num_layers=args.num_layers or 2,
        hidden_dim=args.hidden_dim or 512, projection_dim=args.projection_dim,
        dropout=args.dropout, learning_rate=args.learning_rate, seed=args.seed)
    print(f"ELMo: {tokenizer.vocabulary_size():,} words in the softmax; "
          f"{len(sentences):,} sentences")
    sentences = np.asarray(sentences, dtype=object)
    return model, {"data_for_epoch": lambda epoch: shuffled_epoch(
        sentences, epoch, args.batch_size, args.seed)}


BUILDERS = {"word2vec": _word2vec, "elmo": _elmo, "gpt": _gpt, "bert": _bert}


def run_dir(output):
    """Where a run keeps its checkpoint, curves and logs: OUTPUT.run/."""
    return os.path.normpath(output) + ".run"


def run(args):
    import keras

    from kzoo.training import read_documents, resumable_fit

    batch_size, learning_rate, vocabulary_size, length = DEFAULTS[args.family]
    args.batch_size = args.batch_size or batch_size
    args.learning_rate = args.learning_rate or learning_rate
    args.vocabulary_size = args.vocabulary_size or vocabulary_size
    args.sequence_length = args.sequence_length or length
    documents = read_documents(args.corpus)
    keras.utils.set_random_seed(args.seed)
    model, data = BUILDERS[args.family](documents, args)
    folder = run_dir(args.output)
    print(f"training {args.epochs} epochs; curves, logs and checkpoints in {folder}/")
    history = resumable_fit(model, args.epochs, folder,
                            title=f"kzoo pretrain {args.family}", **data)
    model.save_to_preset(args.output)
    last = ", ".join(f"{k} {v[-1]:.4g}" for k, v in history.items()
                     if "loss" in k or "accuracy" in k)
    print(f"last epoch: {last}")
    print(f"saved the preset to {args.output}")
    return 0
