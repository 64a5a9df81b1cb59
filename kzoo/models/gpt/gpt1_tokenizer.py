"""GPT-1's BPE tokenizer: BERT's basic tokenization, then BPE with ``</w>``."""

from kzoo.preprocessing.engine import tf
from kzoo.api_export import kzoo_export
from kzoo.preprocessing.preprocessing_layer import check_type, preprocessing_function
from kzoo.tokenizers.byte_pair_tokenizer import BytePairTokenizer
from kzoo.tokenizers.tokenizer import to_valid_utf8
from kzoo.tokenizers.word_piece_tokenizer import hugging_face_word_piece, split_words

END_OF_WORD = "</w>"


@kzoo_export("kzoo.models.GPT1Tokenizer")
class GPT1Tokenizer(BytePairTokenizer):
    """The original GPT's (``openai-gpt``) tokenizer.

    Text is cleaned, lowercased, stripped of accents and split on whitespace
    and punctuation as BERT's basic tokenizer does (the path transformers'
    ``OpenAIGPTTokenizer`` takes; its optional ftfy/spaCy path is not
    followed). Each word starts as its characters, the last one carrying
    the end-of-word mark ``</w>``, and the pairs are merged in the order of
    ``merges``. A symbol outside the vocabulary becomes ``unk_token``. The
    ids equal ``OpenAIGPTTokenizer``'s on the same ``vocab.json`` and
    ``merges.txt``. Special tokens written in the text are not kept whole:
    GPT-1's fine-tuning tokens are placed by the packer, by id. The
    TensorFlow ops run inside ``tf.data``; the Python implementation (no
    TensorFlow) runs the same steps on Hugging Face ``tokenizers`` (the
    WordPiece tokenizer's normalization and splitting, then its BPE with
    the ``</w>`` suffix) and gives the same ids and strings.

    Args:
        vocabulary: dict of token to id, or a ``vocab.json`` path.
        merges: list of ``"a b"`` rules, or a ``merges.txt`` path.
        unk_token: str. The token of unknown symbols; it must be in the
            vocabulary. Defaults to ``"<unk>"``.
        sequence_length: int or None. Pad or truncate to this length.
        **kwargs: base layer arguments (``name``).

    Example:
    >>> vocabulary = {"<unk>": 0, "l": 1, "o": 2, "w</w>": 3, "lo": 4,
    ...               "low</w>": 5, "!</w>": 6}
    >>> tokenizer = kzoo.models.GPT1Tokenizer(vocabulary, ["l o", "lo w</w>"])
    >>> tokenizer(["Low!", "lów ?"])
    [[5, 6], [5, 0]]
    >>> tokenizer.detokenize([[5, 6]])
    ['low !']
    """

    def __init__(self, vocabulary=None, merges=None, unk_token="<unk>", **kwargs):
        # Plain attribute, set before Layer.__init__ (the vocabulary check
        # reads it), as GPTTokenizer does.
        object.__setattr__(self, "unk_token",
                           check_type("unk_token", unk_token, str, "a str"))
        kwargs.pop("add_prefix_space", None)
        kwargs.pop("unsplittable_tokens", None)
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)

    def _check_symbols(self, vocabulary):
        if self.unk_token not in vocabulary:
            raise ValueError(f"`vocabulary` must hold the unknown token "
                             f"{self.unk_token!r} (`unk_token`).")

    @property
    def unk_token_id(self):
        return self.token_to_id(self.unk_token)

    @property
    def pad_token_id(self):
        """GPT-1 has no padding token: 0 (masked out)."""
        return None

    def _initial_symbols(self, words):
        chars = tf.strings.unicode_split(words, "UTF-8")
        flat = chars.flat_values
        last = tf.cumsum(chars.row_lengths()) - 1
        is_last = tf.scatter_nd(
            tf.reshape(last, [-1, 1]), tf.ones_like(last, tf.bool),
            tf.shape(flat, tf.int64))
        return chars.with_flat_values(
            tf.where(is_last, tf.strings.join([flat, END_OF_WORD]), flat))

    def _tokenize_flat(self, text):
        merge = self._merge_function()
        words = split_words(to_valid_utf8(text), lowercase=True)
        unique, index = tf.unique(words.flat_values)
        pieces = self._tables()["id"].lookup(merge(unique))
        pieces = tf.ragged.map_flat_values(
            lambda ids: tf.where(ids < 0, tf.cast(self.unk_token_id, ids.dtype), ids),
            pieces)
        return words.with_flat_values(tf.gather(pieces, index)).merge_dims(1, 2)

    @preprocessing_function
    def _detokenize(self, inputs):
        ids = self._checked_ids(inputs)
        tokens = tf.gather(self._tables()["tokens"], ids)
        text = tf.strings.reduce_join(tokens, axis=-1)
        text = tf.strings.regex_replace(text, END_OF_WORD, " ")
        return tf.strings.strip(text)

    # --- the Python engine ---
    def _python_id_bytes(self):
        return None  # detokenize joins the tokens (python_detokenize)

    def _python_hf_tokenizer(self, merges):
        from tokenizers import models

        hf = hugging_face_word_piece([self.unk_token], self.unk_token,
                                     lowercase=True)
        hf.model = models.BPE(dict(self.vocabulary),
                              [tuple(m.split(" ")) for m in merges],
                              unk_token=self.unk_token,
                              end_of_word_suffix=END_OF_WORD)
        return hf

    def _python_splitter(self):
        hf = hugging_face_word_piece([self.unk_token], self.unk_token,
                                     lowercase=True)
        return {"normalizer": hf.normalizer, "pre_tokenizer": hf.pre_tokenizer,
                "unk_id": self.unk_token_id}

    def _python_symbols(self, word):
        return list(word[:-1]) + [word[-1] + END_OF_WORD]

    def _python_text_ids(self, text, state):
        words = state["pre_tokenizer"].pre_tokenize_str(
            state["normalizer"].normalize_str(text))
        ids = []
        for word, _ in words:
            ids.extend(self._python_word_ids(word, state))
        return ids

    def python_detokenize(self, inputs):
        rows = self._python_checked_ids(inputs)
        tokens = self._tokens
        texts = []
        for row in rows:
            text = "".join([tokens[i] for i in row.tolist()]).replace(END_OF_WORD, " ")
            texts.append(text.strip(" \t\n\v\f\r"))  # ASCII, as tf.strings.strip
        return texts

    def get_config(self):
        config = super().get_config()
        config["unk_token"] = self.unk_token
        return config
