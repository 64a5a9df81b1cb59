"""GPT: a word's vector per layer, at its last piece, from its left context."""

import keras
import numpy as np

from kzoo.analysis.word_in_context import WordInContext
from kzoo.presets import preset_loader


def _common_length(a, b):
    """How many leading items ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class GPTWordInContext(WordInContext):
    """The ``WordInContext`` of a GPT model (GPT-2 or GPT-1).

    A left-to-right model's vector of a word is the vector of the word's
    **last** piece: the one that has seen the whole word ("unaffable" →
    ``un aff able``: the vector of ``able``), computed from the text up to
    and including it. The text after the word never reaches it, so the
    sentence is cut there: the backbone runs on the pieces up to the
    target's last one (the sentence's own tokenization, as
    ``tokenizer(sentence)`` gives it, with no start token prepended, as
    transformers' ``GPT2Tokenizer``), and its vector is read at the last
    position. A word at the start of a sentence therefore has no context:
    at each layer, it gets the same vector in every sentence.

    The last piece is found by tokenizing the sentence up to the target's
    end: for a whole word (what ``find_word`` gives) those pieces begin the
    sentence's own, and the last of them is the word's. Where the two part
    (a span that ends inside a word, or byte-level BPE joining a word's
    final punctuation to what follows: ``"etc.)"``), the sentence's first
    piece that differs is taken.

    Layers, as transformers' ``output_hidden_states=True`` gives them: the
    embeddings (token + position), then each decoder block's output. For a
    GPT-2 backbone (``normalize_first=True``) the last one is taken after
    the final layer norm (``ln_f``), as transformers' last hidden state is
    (its other layers are the blocks' raw residual stream); a GPT-1
    backbone has no final norm.

    Args:
        backbone: a ``GPTBackbone``, or a task that holds one (its
            ``preprocessor.tokenizer`` is used when ``tokenizer`` is None).
        tokenizer: a ``GPTTokenizer`` or ``GPT1Tokenizer``.
        batch_size: int. Sentences per forward pass.

    Example:
    >>> vocabulary, merges = kzoo.tokenizers.compute_byte_pair_merges(
    ...     ["the river bank", "the bank lends"] * 3, vocabulary_size=270)
    >>> backbone = kzoo.models.GPTBackbone(
    ...     vocabulary_size=270, num_layers=2, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=16)
    >>> wic = GPTWordInContext(backbone, kzoo.models.GPTTokenizer(vocabulary, merges))
    >>> wic.layer_names
    ('embeddings', 'layer 1', 'layer 2')
    >>> wic.word_vectors("the river bank", "bank").shape
    (3, 4)
    """

    def __init__(self, backbone, tokenizer=None, batch_size=32):
        super().__init__(batch_size=batch_size)
        backbone, tokenizer = self.backbone_and_tokenizer(backbone, tokenizer, "GPTTokenizer")
        if getattr(tokenizer, "sequence_length", None) is not None:
            raise ValueError("The tokenizer pads its output to sequence_length="
                             f"{tokenizer.sequence_length}: pass one built with "
                             "sequence_length=None.")
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.hidden_states = self._hidden_states_model(backbone)
        self.layer_names = ("embeddings",) + tuple(
            f"layer {i + 1}" for i in range(backbone.num_layers))

    @staticmethod
    def _hidden_states_model(backbone):
        """A model sharing ``backbone``'s layers that gives transformers'
        ``hidden_states``: the embeddings, each block's output, the last
        after the final layer norm where there is one."""
        blocks = [layer.output for layer in backbone.transformer_layers]
        if backbone.layer_norm is not None:
            blocks[-1] = backbone.layer_norm.output
        return keras.Model(inputs=backbone.input,
                           outputs=[backbone.embeddings_dropout.output] + blocks,
                           name=f"{backbone.name}_hidden_states")

    def _tokenize(self, texts):
        return [[int(t) for t in row] for row in self.tokenizer(list(texts))]

    def _pieces(self, sentences, spans):
        """Each target's pieces: the sentence's, up to its last piece."""
        for sentence in sentences:
            try:
                sentence.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(f"{sentence!r:.80} is not valid Unicode text "
                                 f"({error.reason}): remove the lone surrogate.") from None
        whole = self._tokenize(sentences)
        before = self._tokenize([s[:end] for s, (_, end) in zip(sentences, spans)])
        rows = []
        limit = self.backbone.max_sequence_length
        for sentence, ids, prefix in zip(sentences, whole, before):
            if not prefix:
                raise ValueError(f"{sentence!r:.80} gives no token up to the "
                                 "target: the span must hold a word.")
            shared = _common_length(ids, prefix)
            last = shared - 1 if shared == len(prefix) else min(shared, len(ids) - 1)
            if last + 1 > limit:
                raise ValueError(
                    f"{sentence!r:.80} has {last + 1} pieces up to its target; the "
                    f"model takes {limit} (max_sequence_length): shorten the text "
                    "before the word.")
            rows.append(ids[:last + 1])
        return rows

    def _embed(self, sentences, spans):
        rows = self._pieces(sentences, spans)
        length = min(self.backbone.max_sequence_length,
                     -(-max(len(r) for r in rows) // 8) * 8)  # fewer shapes
        pad = getattr(self.tokenizer, "pad_token_id", None) or 0
        token_ids = np.full((len(rows), length), pad, "int32")
        padding_mask = np.zeros((len(rows), length), "int32")
        for i, row in enumerate(rows):
            token_ids[i, :len(row)] = row
            padding_mask[i, :len(row)] = 1
        outputs = self.hidden_states.predict_on_batch(
            {"token_ids": token_ids, "padding_mask": padding_mask})
        last = np.array([len(r) - 1 for r in rows])
        batch = np.arange(len(rows))
        return np.stack([keras.ops.convert_to_numpy(h).astype(np.float32)[batch, last]
                         for h in outputs], axis=1)


def word_in_context(model, tokenizer=None, batch_size=32):
    """GPT's family adapter for ``kzoo.analysis``: a ``GPTWordInContext``
    for a backbone or task, or for a preset (name or path; its tokenizer
    with it)."""
    if isinstance(model, str):
        source = preset_loader.get_source(model)
        tokenizer = tokenizer or preset_loader.load_tokenizer(source)
        model = preset_loader.load_backbone(source)
    return GPTWordInContext(model, tokenizer, batch_size=batch_size)
