"""``kzoo prepare``: a corpus → a family's tokenizer and token shards."""

HELP = "tokenize a corpus once into token shards that `kzoo pretrain --data` streams"
#: the options are the families' (their preparations' defaults and own options)
READS_FAMILIES = True


def _preparable():
    from kzoo.models.family import families

    return [f for f in families()
            if f.pretraining is not None and f.pretraining.prepare is not None]


def EXAMPLES():  # noqa: N802 (the other commands' EXAMPLES is a string)
    return """
  kzoo prepare bert --corpus wiki-*.txt.gz --output data/bert
  kzoo pretrain bert --data data/bert --output runs/bert --epochs 3

The corpus is UTF-8 text, plain or gzip: a sentence or paragraph a line, a
blank line between documents. Two streaming passes: the vocabulary is
learned (from an even sample of the documents of about --vocabulary-sample
MB; word2vec counts every word), then the text is tokenized over the
machine's cores into shards with an index and a manifest. OUTPUT is written
whole or not at all; preparing again into it replaces it, or keeps it when
it is up to date with the corpus.
"""


def add_arguments(parser):
    families = _preparable()
    parser.add_argument("family", choices=[f.name for f in families])
    parser.add_argument("--corpus", nargs="+", required=True, metavar="FILE",
                        help="text files, plain or gzip")
    parser.add_argument("--output", required=True, help="the folder to write")
    defaults = ", ".join(
        f"{f.name} {f.pretraining.prepare.defaults['vocabulary_size']}"
        for f in families if "vocabulary_size" in f.pretraining.prepare.defaults)
    parser.add_argument("--vocabulary-size", type=int, default=None,
                        help=f"default per family: {defaults}")
    add_vocabulary_sample(parser)
    parser.add_argument("--shard-tokens", type=int, default=1 << 25,
                        help="tokens per shard (default 2^25)")
    for family in families:
        if family.pretraining.prepare.add_arguments is not None:
            family.pretraining.prepare.add_arguments(
                parser.add_argument_group(f"{family.title} only"))


def add_vocabulary_sample(parser):
    """``--vocabulary-sample MB`` (``kzoo prepare``, ``kzoo pretrain --corpus``)."""
    parser.add_argument("--vocabulary-sample", type=float, default=100, metavar="MB",
                        help="learn the vocabulary from an even sample of the "
                             "documents of about this many MB (default 100)")


def options_of(family, args):
    """The family's preparation options, from the command's arguments."""
    return {name: getattr(args, name, None)
            for name in family.pretraining.prepare.options}


def run(args):
    from kzoo.data import prepare
    from kzoo.models.family import get_family

    family = get_family(args.family)
    prepare(family, args.corpus, args.output, options=options_of(family, args),
            shard_tokens=args.shard_tokens,
            vocabulary_sample_mb=args.vocabulary_sample)
    return 0
