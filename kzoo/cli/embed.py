"""``kzoo embed``: vectors for sentences (BERT, ELMo) or words (word2vec)."""

HELP = "sentence vectors (BERT, ELMo) or word vectors (word2vec) to .npy or stdout"
EXAMPLES = """
  kzoo embed --model minilm_l6_en_uncased --text "a witty film" --text "a dull one"
  kzoo embed --model runs/elmo --input sentences.txt --output vectors.npy
  kzoo embed --model runs/w2v --text king --text queen

BERT gives its sentence embedding (BertTextEmbedder: the mean of the last
layer over the real tokens, unit length; for all-MiniLM-L6-v2 that of
sentence-transformers), ELMo the mean of its layers' average over the words;
word vectors (also GloVe: --model glove_6b_50d_en) take one word per text.
On stdout each input gets one line of numbers.
"""


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a BERT or ELMo preset, a word2vec folder or a "
                             "word2vec .txt / .bin or GloVe .txt file, or glove_6b_50d_en")
    parser.add_argument("--text", action="append", default=[],
                        help="a sentence (or word); repeat for several")
    parser.add_argument("--input", metavar="FILE", help="one sentence (or word) a line")
    parser.add_argument("--output", metavar="FILE.npy", help="default: stdout")
    parser.add_argument("--sequence-length", type=int, default=128, help="BERT")
    parser.add_argument("--batch-size", type=int, default=32)


def _inputs(args):
    from kzoo.cli.environment import CommandError

    texts = list(args.text)
    if args.input:
        with open(args.input, encoding="utf-8") as f:  # FileNotFoundError names it
            texts += [line.strip() for line in f if line.strip()]
    if not texts:
        raise CommandError("nothing to embed: pass --text TEXT or --input FILE.")
    return texts


def _sentences(preset, texts, args):
    """Sentence vectors: the family's own ``embed``, else its ``TextEmbedder``."""
    import kzoo
    from kzoo.cli.loading import family

    record = family(preset)
    if record.embed is not None:
        return record.embed(preset, texts, batch_size=args.batch_size,
                            sequence_length=args.sequence_length)
    if not record.tasks_of(kzoo.models.TextEmbedder):
        from kzoo.cli.environment import CommandError
        from kzoo.models.family import families

        able = [f.title for f in families() if f.embed or f.word_vectors
                or f.tasks_of(kzoo.models.TextEmbedder)]
        raise CommandError(f"{preset} is a {record.title} model, which gives no "
                           f"vectors; kzoo embed takes {', '.join(able)}.")
    embedder = kzoo.models.TextEmbedder.from_preset(
        preset, sequence_length=args.sequence_length)
    return embedder.predict(texts, batch_size=args.batch_size, verbose=0)


def _words(wv, texts):
    import numpy as np

    missing = [t for t in texts if t not in wv]
    if missing:
        raise KeyError(f"not in the vocabulary: {', '.join(missing)}")
    return np.stack([wv[t] for t in texts])


def run(args):
    import os
    import sys

    import numpy as np

    from kzoo.cli.loading import family, load_word_vectors

    texts = _inputs(args)
    if os.path.isfile(args.model) or family(args.model).word_vectors is not None:
        vectors = _words(load_word_vectors(args.model), texts)
    else:
        vectors = _sentences(args.model, texts, args)
    vectors = np.asarray(vectors, "float32")
    if args.output:
        np.save(args.output, vectors)
        print(f"wrote {vectors.shape[0]} vectors of {vectors.shape[1]} to {args.output}",
              file=sys.stderr)
    else:
        np.savetxt(sys.stdout, vectors, fmt="%.6g")
    return 0
