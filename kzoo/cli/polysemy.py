"""``kzoo polysemy``: a word's vectors in context, per layer."""

import sys

EVALUATION_MODELS = ("glove_6b_50d", "minilm_l6_en_uncased")
HELP = "a word's vectors in context, per layer (word2vec, ELMo, GPT, BERT)"
EXAMPLES = """
  kzoo polysemy --word bank "the bank of the river" "a loan from the bank"
  kzoo polysemy --evaluate --model glove_6b_50d --model minilm_l6_en_uncased
"""


def add_arguments(parser):
    parser.add_argument("sentences", nargs="*", help="two sentences holding --word")
    parser.add_argument("--word", help="the target word, as written in the sentences")
    parser.add_argument("--index", type=int, nargs="+", default=None,
                        help="which occurrence of the word (0 = first) if it occurs "
                             "more than once; one value, or one per sentence")
    parser.add_argument("--model", action="append", default=None,
                        help="glove_6b_50d, a word-vector file, or an ELMo / GPT / BERT "
                             "preset or folder; repeat for several (default: "
                             "minilm_l6_en_uncased; with --evaluate "
                             f"{' and '.join(EVALUATION_MODELS)})")
    parser.add_argument("--evaluate", action="store_true",
                        help="score every layer on WordNet 3.0 sense pairs, print the "
                             "table and write the plots")
    parser.add_argument("--output", default="runs/polysemy", help="folder for the plots")
    parser.add_argument("--wordnet", default=None,
                        help="WordNet database folder (default /usr/share/wordnet)")
    parser.add_argument("--max-pairs-per-lemma", type=int, default=2)
    parser.add_argument("--same-form", action="store_true",
                        help="only pair uses where the word is written the same")
    parser.add_argument("--seed", type=int, default=0)


def run(args):
    from kzoo.analysis import (
        WordNetNotFoundError,
        display_name,
        load_word_in_context,
        run_polysemy_evaluation,
    )

    try:
        if args.evaluate:
            if args.word or args.sentences:
                raise ValueError("--evaluate takes no --word or sentences.")
            run_polysemy_evaluation(
                args.model or list(EVALUATION_MODELS), args.output,
                wordnet=args.wordnet, max_pairs_per_lemma=args.max_pairs_per_lemma,
                same_form=args.same_form, seed=args.seed)
            return 0
        if not args.word or len(args.sentences) != 2:
            raise ValueError('pass --word WORD and two sentences ("..." "..."), '
                           "or --evaluate.")
        for name in args.model or ["minilm_l6_en_uncased"]:
            wic = load_word_in_context(name)
            index = args.index
            if index is not None:
                if len(index) > 2:
                    raise ValueError("--index takes one value, or one per sentence.")
                index = index[0] if len(index) == 1 else tuple(index)
            values = wic.similarity(args.word, *args.sentences, index=index)
            for layer, value in zip(wic.layer_names, values):
                print(f"{display_name(name)}  {layer:<14} cosine {value:.3f}")
    except (ValueError, KeyError, WordNetNotFoundError) as exc:
        print(f"kzoo polysemy: error: {exc}", file=sys.stderr)
        return 2
    return 0
