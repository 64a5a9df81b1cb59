"""``kzoo compare``: the four families trained on one corpus for one budget
and measured with the same probes (``kzoo.analysis.compare``)."""

import shlex

HELP = ("train word2vec, ELMo, GPT and BERT on one corpus for the same minutes "
        "and measure them alike; writes report.md, results.json and plots")
EXAMPLES = """
  python -m kzoo.datasets.austen austen.txt
  kzoo compare --corpus austen.txt --minutes 10 --output runs/compare

Each family trains through its own pretraining recipe for --minutes of
wall-clock (sizes chosen for the budget), then every model is probed the
same way: WordSim-353 / SimLex-999 / Google analogies per layer, per-layer
polysemy AUC on WordNet sense pairs, a frozen-feature sentiment probe and
fine-tuning (GPT, BERT) on the Pang & Lee sentences, 5 splits each.
A smoke run: --minutes 1 (about 15-25 minutes in all on 2 cores).

Run the same command again with the same --output (or pass --plan
OLD/results.json) and each family trains exactly the steps it reached
before: the same numbers on the same backend.
"""


def add_arguments(parser):
    parser.add_argument("--corpus", nargs="+", required=True, metavar="FILE",
                        help="text files, a blank line between documents; the last "
                             "10%% of the documents are held out")
    parser.add_argument("--minutes", type=float, required=True,
                        help="training wall-clock per family (the sizes follow it)")
    parser.add_argument("--output", required=True,
                        help="folder for report.md, results.json, the plots and each "
                             "family's preset")
    parser.add_argument("--families", nargs="+", default=None, metavar="FAMILY",
                        help="a subset, in the order given (default: every family "
                             "with a pretraining recipe)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plan", default=None, metavar="RESULTS_JSON",
                        help="replay the steps of an earlier run (default: "
                             "OUTPUT/results.json where it exists)")
    parser.add_argument("--work", default=None,
                        help="folder for the corpus's parts and each family's data and "
                             "preset (default: OUTPUT)")
    parser.add_argument("--max-wordnet-pairs", type=int, default=None,
                        help="score at most this many WordNet pairs (default: all)")


def command_line(args):
    """The command that reproduces ``args`` (the backend named)."""
    import keras

    words = ["kzoo", "compare", "--corpus", *args.corpus, "--minutes", f"{args.minutes:g}",
             "--output", args.output]
    if args.families:
        words += ["--families", *args.families]
    if args.seed:
        words += ["--seed", str(args.seed)]
    if args.plan:
        words += ["--plan", args.plan]
    if args.work:
        words += ["--work", args.work]
    if args.max_wordnet_pairs is not None:
        words += ["--max-wordnet-pairs", str(args.max_wordnet_pairs)]
    return shlex.join(words + ["--backend", keras.backend.backend()])


def run(args):
    from kzoo.analysis.compare import compare

    minutes = int(args.minutes) if float(args.minutes).is_integer() else args.minutes
    compare(args.corpus, minutes, args.output, families=args.families, seed=args.seed,
            plan=args.plan, command=command_line(args),
            max_wordnet_pairs=args.max_wordnet_pairs, work=args.work)
    return 0
