"""Static word vectors with gensim's `KeyedVectors` habits (plain numpy)."""

import io
import itertools
import os

import keras
import numpy as np

from kzoo.models.word2vec.word2vec_backbone import Word2VecBackbone
from kzoo.presets import preset_loader, preset_saver
from kzoo.presets.atomic_files import atomic_file
from kzoo.tokenizers.word_tokenizer import WordTokenizer

_CHUNK_ROWS = 256  # analogy questions per matrix product
#: the longest line a word2vec / GloVe text file may hold (a word and its
#: vector: 300 dims take about 3 KB)
MAX_LINE_BYTES = 8 << 20
_MAX_HEADER_BYTES = 256
#: the token of row 0 of a backbone's table: words outside the vocabulary
OOV_TOKEN = "[UNK]"


def _as_list(items):
    if items is None:
        return []
    if isinstance(items, (str, np.ndarray)):
        return [items]
    return list(items)


def _top(dists, k):
    """Indices of the `k` largest `dists`, largest first (gensim's
    `matutils.argsort(..., reverse=True)`: argpartition, then argsort)."""
    k = min(k, dists.shape[-1])
    if k == dists.shape[-1]:
        return np.argsort(-dists, kind="stable")
    best = np.argpartition(-dists, k)[:k]
    return best.take(np.argsort(-dists.take(best)))


def _correlations(gold, model):
    from scipy import stats  # a dependency of jax, so always installed

    return stats.pearsonr(gold, model), stats.spearmanr(gold, model)


class WordVectors:
    """A word → vector table with word2vec's similarity queries and evaluations.

    The methods follow gensim's `KeyedVectors` (same names, arguments,
    results and file formats), computed with matrix products over the
    normalised vectors. Words are kept in the order given, which is
    descending frequency for trained or word2vec-format vectors, so
    `restrict_vocab=n` means "the `n` most frequent words".

    Words absent from the vocabulary raise a `KeyError` naming the word, as
    in gensim, except where a method says it skips them (`doesnt_match`,
    and the evaluations, which count them as out-of-vocabulary).

    Args:
        vectors: float array `[num_words, dim]`.
        words: list of str, the word of each row (no duplicates).
        counts: optional list of int, the corpus count of each word.

    Example:
    >>> wv = kzoo.models.WordVectors(
    ...     np.array([[1., 0.], [0.9, 0.1], [0., 1.], [-1., 0.]]),
    ...     ["king", "queen", "apple", "pear"])
    >>> [w for w, _ in wv.most_similar("king", topn=2)]
    ['queen', 'apple']
    >>> round(wv.similarity("king", "pear"), 3)
    -1.0
    >>> wv.doesnt_match(["king", "queen", "pear"])
    'pear'
    """

    def __init__(self, vectors, words, counts=None):
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or not np.issubdtype(vectors.dtype, np.number):
            raise ValueError(
                f"`vectors` must be a 2-D numeric array, got shape {vectors.shape} "
                f"and dtype {vectors.dtype}."
            )
        words = [str(w) for w in words]
        if len(words) != vectors.shape[0]:
            raise ValueError(
                f"`words` has {len(words)} entries but `vectors` has "
                f"{vectors.shape[0]} rows; they must match."
            )
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.index_to_key = words
        self.key_to_index = {w: i for i, w in enumerate(words)}
        if len(self.key_to_index) != len(words):
            seen, dups = set(), []
            for w in words:
                if w in seen:
                    dups.append(w)
                seen.add(w)
            raise ValueError(f"`words` has duplicates, such as {dups[:5]}.")
        if counts is not None:
            counts = [int(c) for c in counts]
            if len(counts) != len(words):
                raise ValueError(
                    f"`counts` has {len(counts)} entries for {len(words)} words.")
        self.counts = counts
        self._norms = None

    # --- lookups ---
    @property
    def vector_size(self):
        return self.vectors.shape[1]

    @property
    def words(self):
        return self.index_to_key

    @property
    def norms(self):
        if self._norms is None:
            self._norms = np.linalg.norm(self.vectors, axis=1)
        return self._norms

    def __len__(self):
        return len(self.index_to_key)

    def __contains__(self, word):
        return word in self.key_to_index

    def __getitem__(self, word):
        if isinstance(word, str):
            return self.get_vector(word)
        return np.stack([self.get_vector(w) for w in word])

    def get_index(self, word):
        """Row of `word`; `KeyError` naming it if it is not in the vocabulary."""
        try:
            return self.key_to_index[word]
        except KeyError:
            raise KeyError(f"Word {word!r} is not in the vocabulary "
                           f"({len(self)} words).") from None

    def get_vector(self, word, norm=False):
        """The vector of `word` (unit length with `norm=True`)."""
        i = self.get_index(word)
        if norm:
            n = self.norms[i]
            return self.vectors[i] / n if n > 0 else self.vectors[i].copy()
        return self.vectors[i]

    def _normed(self, stop=None):
        vectors = self.vectors[:stop]
        norms = self.norms[:stop]
        return vectors / np.where(norms > 0, norms, 1)[:, None]

    # --- similarity queries ---
    def _mean(self, keys, weights):
        """gensim's `get_mean_vector(pre_normalize=True, post_normalize=True)`."""
        mean = np.zeros(self.vector_size, np.float32)
        total = 0.0
        for key, weight in zip(keys, weights):
            vector = (np.asarray(key, np.float32) if isinstance(key, np.ndarray)
                      else self.get_vector(key, norm=True))
            mean += weight * vector
            total += abs(weight)
        if total > 0:
            mean = mean / total
        norm = np.linalg.norm(mean)
        return (mean / norm).astype(np.float32) if norm > 0 else mean

    def most_similar(self, positive=None, negative=None, topn=10,
                     restrict_vocab=None):
        """Words closest (cosine) to the mean of `positive` minus `negative`.

        Args:
            positive: a word, a vector, or a list of them (weight +1); list
                items may also be `(word, weight)`.
            negative: the same, with weight -1.
            topn: int, or None for the similarities to every word.
            restrict_vocab: int or None. Only search the first (most
                frequent) `restrict_vocab` words.

        Returns:
            A list of `(word, cosine)`, most similar first, without the
            input words (or an array of all similarities when `topn` is None).
        """
        if isinstance(topn, int) and topn < 1:
            return []
        items = [(k, 1.0) for k in _as_list(positive)]
        items += [(k, -1.0) for k in _as_list(negative)]
        keys, weights = [], []
        for item, weight in items:
            if isinstance(item, tuple):
                item, weight = item
            keys.append(item)
            weights.append(weight)
        if not keys:
            raise ValueError("`most_similar` needs at least one positive or "
                             "negative word.")
        mean = self._mean(keys, weights)
        exclude = {self.key_to_index[k] for k in keys
                   if isinstance(k, str) and k in self.key_to_index}
        stop = len(self) if not restrict_vocab else min(restrict_vocab, len(self))
        dists = self.vectors[:stop] @ mean / self.norms[:stop]
        if not topn:
            return dists
        best = _top(dists, topn + len(exclude))
        return [(self.index_to_key[i], float(dists[i])) for i in best
                if i not in exclude][:topn]

    def most_similar_cosmul(self, positive=None, negative=None, topn=10,
                            restrict_vocab=None):
        """3CosMul (Levy & Goldberg, 2014): the product of the positive
        words' cosines divided by that of the negative words', each shifted
        to `[0, 1]`. Arguments and result as in `most_similar`."""
        if isinstance(topn, int) and topn < 1:
            return []
        positive, negative = _as_list(positive), _as_list(negative)
        if not positive:
            raise ValueError("`most_similar_cosmul` needs a positive word.")
        exclude = {self.key_to_index[w] for w in positive + negative
                   if isinstance(w, str) and w in self.key_to_index}
        stop = len(self) if not restrict_vocab else min(restrict_vocab, len(self))

        def shifted(terms):
            vectors = [self.get_vector(t, norm=True) if isinstance(t, str)
                       else np.asarray(t, np.float32) for t in terms]
            return [(1 + self.vectors[:stop] @ v / self.norms[:stop]) / 2
                    for v in vectors]

        dists = np.prod(shifted(positive), axis=0)
        if negative:
            dists = dists / (np.prod(shifted(negative), axis=0) + 1e-6)
        else:
            dists = dists / (1 + 1e-6)
        if not topn:
            return dists
        best = _top(dists, topn + len(exclude))
        return [(self.index_to_key[i], float(dists[i])) for i in best
                if i not in exclude][:topn]

    def similarity(self, word1, word2):
        """Cosine similarity of two words."""
        return float(self.get_vector(word1, norm=True) @ self.get_vector(word2, norm=True))

    def doesnt_match(self, words):
        """The word furthest from the mean of the (unit) vectors of `words`.

        Words not in the vocabulary are skipped; an error is raised if none
        is left.
        """
        used = [w for w in words if w in self.key_to_index]
        if not used:
            raise ValueError(f"None of {list(words)!r} is in the vocabulary.")
        vectors = np.stack([self.get_vector(w, norm=True) for w in used])
        mean = vectors.mean(axis=0)
        mean = mean / max(np.linalg.norm(mean), 1e-30)
        dists = vectors @ mean
        return sorted(zip(dists.tolist(), used), reverse=True)[-1][1]

    # --- evaluations ---
    def _ok_vocab(self, restrict_vocab, case_insensitive):
        """gensim's lookup for the evaluations: the first `restrict_vocab`
        words (uppercased when case-insensitive, the most frequent
        spelling winning)."""
        ok = {}
        for i, w in enumerate(self.index_to_key[:restrict_vocab]):
            ok.setdefault(w.upper() if case_insensitive else w, i)
        return ok

    def evaluate_word_analogies(self, analogies, restrict_vocab=300000,
                                case_insensitive=True, dummy4unknown=False):
        """Accuracy on analogy questions "a is to b as c is to ?" (3CosAdd).

        The file format is the Google analogy set's (`questions-words.txt`):
        `: section` lines, then lines `a b c expected`. The answer is the
        most similar word to `b - a + c` among the first `restrict_vocab`
        words, the question words excluded. Questions with a word outside
        them are skipped (counted wrong with `dummy4unknown`). Same rules and
        numbers as gensim's method, computed a chunk of questions at a time.

        Args:
            analogies: path of the questions file.
            restrict_vocab: int. Only the most frequent words count.
            case_insensitive: bool. Compare uppercased words (gensim's
                default); the most frequent spelling stands for a word.
            dummy4unknown: bool. Count out-of-vocabulary questions as wrong.

        Returns:
            `(accuracy, sections)`: the total accuracy, and a list of dicts
            `{"section", "correct", "incorrect"}` (lists of question
            tuples), one per section then a `"Total accuracy"` one.
        """
        ok = self._ok_vocab(restrict_vocab, case_insensitive)
        sections, entries, questions, oov, total_questions = [], [], [], 0, 0
        with open(analogies, "rb") as f:
            for line_no, raw in enumerate(f, 1):
                line = raw.decode("utf-8", errors="replace")
                if line.startswith(": "):
                    sections.append({"section": line[2:].strip(), "correct": [],
                                     "incorrect": []})
                    continue
                if not sections:
                    raise ValueError(
                        f"{analogies}, line {line_no}: a question before the "
                        "first ': section' line.")
                parts = line.split()
                if len(parts) != 4:
                    continue
                if case_insensitive:
                    parts = [p.upper() for p in parts]
                total_questions += 1
                quad = tuple(parts)
                if not all(p in ok for p in quad):
                    oov += 1
                    if dummy4unknown:
                        entries.append((len(sections) - 1, quad, False))
                    continue
                entries.append((len(sections) - 1, quad, True))
                questions.append((len(sections) - 1, quad))
        answers = []
        if questions:
            stop = min(restrict_vocab, len(self))
            normed = self._normed(stop)
            vectors, norms = self.vectors[:stop], self.norms[:stop]
            upper = [w.upper() if case_insensitive else w
                     for w in self.index_to_key[:stop]]
            for start in range(0, len(questions), _CHUNK_ROWS):
                chunk = questions[start:start + _CHUNK_ROWS]
                ids = np.array([[ok[w] for w in q[:3]] for _, q in chunk])
                mean = (-normed[ids[:, 0]] + normed[ids[:, 1]]
                        + normed[ids[:, 2]]) / 3
                mean /= np.linalg.norm(mean, axis=1, keepdims=True)
                dists = (mean @ vectors.T) / norms
                rows = np.arange(len(chunk))[:, None]
                dists[rows, ids] = -np.inf
                best, found = [], []
                for _ in range(min(5, stop)):  # 5 argmax passes beat a sort
                    i = np.argmax(dists, axis=1)
                    found.append(dists[rows[:, 0], i] > -np.inf)
                    best.append(i)
                    dists[rows[:, 0], i] = -np.inf
                best, found = np.stack(best, 1), np.stack(found, 1)
                for (section, quad), top, ok_top in zip(chunk, best, found):
                    top = top[ok_top]
                    predicted = None
                    for i in top:
                        predicted = upper[i]
                        if predicted not in quad[:3]:
                            break
                    answers.append(predicted == quad[3])
        answers = iter(answers)
        for section, quad, answered in entries:  # gensim's order
            right = answered and next(answers)
            sections[section]["correct" if right else "incorrect"].append(quad)
        total = {
            "section": "Total accuracy",
            "correct": [q for s in sections for q in s["correct"]],
            "incorrect": [q for s in sections for q in s["incorrect"]],
        }
        sections.append(total)
        answered = len(total["correct"]) + len(total["incorrect"])
        return (len(total["correct"]) / answered if answered else 0.0), sections

    def evaluate_word_pairs(self, pairs, delimiter="\t", restrict_vocab=300000,
                            case_insensitive=True, dummy4unknown=False):
        """Correlation of cosine similarities with human judgements.

        The file has lines `word1<delimiter>word2<delimiter>score`; lines
        starting with `#` and lines that do not parse are skipped (such as
        SimLex-999's header). Pairs with a word outside the first
        `restrict_vocab` words are left out and counted (or scored 0 with
        `dummy4unknown`), as gensim does.

        Returns:
            `(pearson, spearman, oov_ratio)`: scipy's `(statistic, pvalue)`
            results and the percentage of pairs left out.
        """
        ok = self._ok_vocab(restrict_vocab, case_insensitive)
        normed = self._normed(min(restrict_vocab, len(self)))
        gold, model, oov = [], [], 0
        with open(pairs, encoding="utf-8") as f:
            for line in f:
                if not line or line.startswith("#"):
                    continue
                parts = line.split(delimiter)
                try:
                    a, b, score = parts
                    score = float(score)
                except ValueError:
                    continue
                if case_insensitive:
                    a, b = a.upper(), b.upper()
                if a not in ok or b not in ok:
                    oov += 1
                    if dummy4unknown:
                        gold.append(score)
                        model.append(0.0)
                    continue
                gold.append(score)
                model.append((ok[a], ok[b]))
        if not gold:
            raise ValueError(f"No pair of {pairs} is in the vocabulary: nothing "
                             "to correlate.")
        ids = np.array([m for m in model if isinstance(m, tuple)]).reshape(-1, 2)
        sims = iter(np.sum(normed[ids[:, 0]] * normed[ids[:, 1]], axis=1).tolist())
        model = [next(sims) if isinstance(m, tuple) else m for m in model]
        pearson, spearman = _correlations(gold, model)
        denominator = len(gold) if dummy4unknown else len(gold) + oov
        return pearson, spearman, 100.0 * oov / denominator

    # --- presets ---
    @classmethod
    def from_preset(cls, preset):
        """Word vectors from a file, a folder or a registered name.

        Args:
            preset: a word2vec C text or binary file, a GloVe text file (the
                format is told from the file), a registered name such as
                ``"glove_6b_50d_en"`` (``kzoo.list_presets()``), a folder
                written by ``WordVectors.save_to_preset`` or by a word2vec
                task's ``save_to_preset``, or a folder of ``*_emb.npy`` +
                ``*_index.parquet``.

        Returns:
            A ``WordVectors`` (the out-of-vocabulary token of a saved model
            left out).

        Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "v.txt")
        >>> kzoo.models.WordVectors(np.eye(3), ["a", "b", "c"]).save_word2vec_format(path)
        >>> kzoo.models.WordVectors.from_preset(path)
        <WordVectors: 3 words x 3 dims>
        """
        source = preset_loader.get_source(preset)
        if hasattr(source, "word_vectors"):
            return source.word_vectors()
        backbone = preset_loader.load_backbone(preset)
        return cls.from_backbone(backbone, preset_loader.load_tokenizer(preset))

    @classmethod
    def from_backbone(cls, backbone, tokenizer):
        """The input vectors of a ``Word2VecBackbone``, one per word of its
        ``WordTokenizer`` (in vocabulary order, the out-of-vocabulary token
        left out)."""
        if not isinstance(backbone, Word2VecBackbone) or not isinstance(
                tokenizer, WordTokenizer):
            raise ValueError(
                "WordVectors come from a Word2VecBackbone and its WordTokenizer "
                f"(or a word-vector file); got a {type(backbone).__name__} and a "
                f"{type(tokenizer).__name__}.")
        vocabulary = tokenizer.get_vocabulary()
        counts = tokenizer.counts
        skip = tokenizer.token_to_id(tokenizer.oov_token)
        keep = [i for i in range(len(vocabulary)) if i != skip]
        vectors = keras.ops.convert_to_numpy(backbone.token_embedding.embeddings)
        return cls(np.asarray(vectors)[keep], [vocabulary[i] for i in keep],
                   None if counts is None else [counts[i] for i in keep])

    def to_backbone(self, backbone=None):
        """A ``Word2VecBackbone`` whose input table holds these vectors after
        a zero row for ``[UNK]`` (the output table zero, as word2vec starts
        it); with ``backbone``, its tables are set instead (all or nothing).
        """
        wanted = (len(self) + 1, self.vector_size)
        if backbone is None:
            backbone = Word2VecBackbone(vocabulary_size=wanted[0],
                                        hidden_dim=wanted[1])
        table = backbone.token_embedding.embeddings
        if tuple(table.shape) != wanted:
            raise ValueError(
                f"{len(self)} words x {self.vector_size} dims need a {wanted} "
                f"table (with [UNK]); the backbone's is {tuple(table.shape)}.")
        table.assign(np.concatenate([np.zeros((1, wanted[1]), np.float32),
                                     self.vectors]))
        backbone.context_embedding.embeddings.assign(np.zeros(wanted, np.float32))
        return backbone

    def to_tokenizer(self, tokenizer_cls=WordTokenizer, **kwargs):
        """A ``WordTokenizer`` over ``[UNK]`` + these words, with their
        counts (``len - rank`` when unknown, as gensim gives the words of a
        word2vec file)."""
        if OOV_TOKEN in self:
            raise ValueError(f"The vocabulary has a word {OOV_TOKEN!r}, which kzoo "
                             "keeps for out-of-vocabulary words.")
        counts = self.counts or list(range(len(self), 0, -1))
        kwargs.setdefault("oov_token", OOV_TOKEN)
        return tokenizer_cls(vocabulary=[OOV_TOKEN] + list(self.index_to_key),
                             counts=[0] + list(counts), **kwargs)

    def save_to_preset(self, preset_dir):
        """Writes the vectors as a kzoo preset folder (a ``Word2VecBackbone``
        and its ``WordTokenizer``), atomically: ``WordVectors.from_preset``
        reads it back, and ``Word2VecSkipGram.from_preset`` trains on."""
        preset_saver.save_preset(preset_dir, backbone=self.to_backbone(),
                                 tokenizer=self.to_tokenizer())

    def serving_model(self, lowercase=False):
        """What ``kzoo.export.saved_model`` writes for these vectors: a
        ``kzoo.export.word_table.WordTable``, whose ``serving_default`` looks
        ``words`` up (``vectors``, ``found``) and ``most_similar`` gives
        each word's 10 nearest (``neighbours``, ``scores``, ``found``).

        Args:
            lowercase: bool. Lowercase each word before the lookup (vectors
                trained on lowercased text).
        """
        from kzoo.export.word_table import WordTable

        return WordTable(self.index_to_key, self.vectors, lowercase=lowercase)

    def onnx_files(self, folder, lowercase=False):
        """Writes ``model.onnx`` and ``tokenizer.json`` into ``folder``
        (``kzoo.export.onnx``; see ``kzoo.export.word_table.write_onnx``):
        a word's id from ``tokenizer.json`` in, ``vectors`` and ``found``
        out.

        Args:
            lowercase: bool. Lowercase each word before the lookup.
        """
        from kzoo.export.word_table import write_onnx

        write_onnx(self.index_to_key, self.vectors, folder, lowercase=lowercase)

    # --- files ---
    def save_word2vec_format(self, path, binary=False):
        """Writes the word2vec C format: a `count dim` header line, then
        per word `word v1 ... vd` (text) or `word ` + float32 bytes + `\\n`
        (binary), in vocabulary order. The file is replaced atomically: on
        an error (a full disk) an existing file at ``path`` stays as it was."""
        with atomic_file(path, "wb") as f:
            f.write(f"{len(self)} {self.vector_size}\n".encode("utf-8"))
            for word, row in zip(self.index_to_key, self.vectors):
                if " " in word or "\n" in word or not word:
                    raise ValueError(
                        f"Word {word!r} cannot be written in the word2vec "
                        "format (it needs words without spaces or newlines).")
                if binary:
                    f.write(word.encode("utf-8") + b" "
                            + row.astype("<f4").tobytes() + b"\n")
                else:
                    # str(np.float32) is the shortest text that reads back
                    # as the same float32.
                    f.write(f"{word} {' '.join(map(str, row))}\n".encode("utf-8"))

    @classmethod
    def load_word2vec_format(cls, path, binary=False, limit=None,
                             no_header=False):
        """Reads word2vec C text or binary files (and header-less text
        files such as GloVe's with `no_header=True`).

        Args:
            path: the file.
            binary: bool. The binary format (float32 vectors).
            limit: int or None. Read only the first `limit` words.
            no_header: bool. A text file without the `count dim` line.

        Raises:
            ValueError: naming the line (text) or entry (binary) of a
                malformed or truncated file.
        """
        if no_header:
            if binary:
                raise ValueError("`no_header=True` is for text files only "
                                 "(binary files always have a header).")
            return cls._read_text(path, None, None, limit, first_line=1)
        with open(path, "rb") as f:
            header = f.readline(_MAX_HEADER_BYTES).decode("utf-8", errors="replace").split()
            try:
                count, dim = (int(x) for x in header)
            except ValueError:
                raise ValueError(
                    f"{path}, line 1: expected the header `count dim`, got "
                    f"{' '.join(header)[:60]!r}. For a file without header "
                    "(GloVe), pass no_header=True.") from None
            if count < 0 or dim < 1:
                raise ValueError(
                    f"{path}, line 1: the header `{count} {dim}` must give a "
                    "word count of at least 0 and a vector size of at least "
                    "1. Fix the file's first line.")
            if limit:
                count = min(count, limit)
            if binary:
                return cls._read_binary(f, path, count, dim)
        return cls._read_text(path, count, dim, limit, first_line=2)

    @classmethod
    def load_glove(cls, path, limit=None):
        """Reads a GloVe text file (`word v1 ... vd` lines, no header)."""
        return cls.load_word2vec_format(path, limit=limit, no_header=True)

    @classmethod
    def _read_text(cls, path, count, dim, limit, first_line):
        words, rows = [], []
        with open(path, "rb") as f:
            if first_line == 2:
                f.readline(_MAX_HEADER_BYTES)
            for line_no in itertools.count(first_line):
                if count is not None and len(words) == count:
                    break
                if limit and len(words) == limit:
                    break
                raw = f.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                if len(raw) > MAX_LINE_BYTES:
                    raise ValueError(
                        f"{path}, line {line_no}: longer than {MAX_LINE_BYTES} "
                        "bytes, more than a word and its vector take: the file "
                        "is not a word2vec / GloVe text file (binary=True for "
                        "the binary format).")
                parts = raw.decode("utf-8", errors="replace").rstrip("\n\r ").split(" ")
                if dim is None:
                    dim = len(parts) - 1
                if len(parts) != dim + 1:
                    raise ValueError(
                        f"{path}, line {line_no}: expected a word and {dim} "
                        f"numbers, got {len(parts) - 1} fields after "
                        f"{parts[0][:40]!r}.")
                try:
                    rows.append(np.array(parts[1:], dtype=np.float32))
                except ValueError:
                    raise ValueError(
                        f"{path}, line {line_no}: the vector of {parts[0][:40]!r} "
                        "has a field that is not a number.") from None
                words.append(parts[0])
        if count is not None and len(words) < count:
            raise ValueError(
                f"{path}, line {first_line + len(words)}: the file ends after "
                f"{len(words)} of the {count} words its header announces.")
        vectors = np.stack(rows) if rows else np.zeros((0, dim or 0), np.float32)
        return cls(vectors, words)

    @classmethod
    def _read_binary(cls, f, path, count, dim):
        size = 4 * dim
        # Rows for the entries the file can hold (each is at least a space and
        # the vector's bytes), not for what the header announces: a file
        # shorter than its header says fails at its last entry instead.
        capacity = (os.fstat(f.fileno()).st_size - f.tell()) // (size + 1)
        words, vectors = [], np.empty((min(count, capacity), dim), np.float32)
        reader = io.BufferedReader(f, buffer_size=1 << 20) if not isinstance(
            f, io.BufferedReader) else f
        for i in range(count):
            word = bytearray()
            while True:
                byte = reader.read(1)
                if not byte:
                    raise ValueError(
                        f"{path}: truncated at entry {i + 1} of {count} "
                        f"(line {i + 2} counting the header): the file ends "
                        f"inside the word {bytes(word)[:40]!r}.")
                if byte == b" ":
                    break
                if byte != b"\n" or word:
                    word += byte
            data = reader.read(size)
            if len(data) < size:
                raise ValueError(
                    f"{path}: truncated at entry {i + 1} of {count} (line "
                    f"{i + 2} counting the header): the vector of "
                    f"{word.decode('utf-8', 'replace')!r} has {len(data)} of "
                    f"{size} bytes.")
            vectors[i] = np.frombuffer(data, dtype="<f4")
            words.append(word.decode("utf-8", errors="replace"))
        return cls(vectors, words)

    def __repr__(self):
        return f"<WordVectors: {len(self)} words x {self.vector_size} dims>"

