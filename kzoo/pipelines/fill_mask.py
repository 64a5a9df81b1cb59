"""The "fill-mask" pipeline: the likeliest tokens where the text writes the mask."""

from kzoo.pipelines.base import Pipeline, as_list


class FillMaskPipeline(Pipeline):
    """The likeliest tokens at each mask token, as Hugging Face's fill-mask
    pipeline.

    The mask token is written in the text (``model.preprocessor.mask_token``,
    ``"[MASK]"`` for BERT). Each prediction is ``{"score", "token",
    "token_str", "sequence"}``: the softmax probability, the token id, the
    token, and the text with that mask replaced by the token (word-piece
    continuations, ``"##s"``, joined to the word before it; the text is kept
    as written, not lowercased as Hugging Face's decoding does). A text
    with one mask gives a list of ``top_k`` predictions; a text with several
    masks a list (one per mask, in text order) of such lists. A list of texts
    gives a list of those. A text without a mask token is an error.

    Args:
        model: a preset name or folder (``kzoo.models.MaskedLM.from_preset``),
            or a built ``kzoo.models.MaskedLM``.
        top_k: int. Predictions per mask (Hugging Face's default, 5).
        batch_size: int. Texts per forward pass.
        model_kwargs: dict of ``from_preset`` arguments, with a preset.

    Example:
    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    >>> backbone = kzoo.models.BertBackbone(
    ...     vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
    ...     intermediate_dim=8, max_sequence_length=8)
    >>> model = kzoo.models.BertMaskedLM(
    ...     backbone, preprocessor=kzoo.models.BertMaskedLMPreprocessor(
    ...         kzoo.models.BertTokenizer(vocabulary=vocab), sequence_length=8))
    >>> fill = kzoo.pipeline("fill-mask", model, top_k=2)
    >>> found = fill("the [MASK] sat")
    >>> len(found), sorted(found[0])
    (2, ['score', 'sequence', 'token', 'token_str'])
    >>> found[0]["sequence"] == "the " + found[0]["token_str"].lstrip("#") + " sat"
    True
    """

    task = "fill-mask"
    task_shape = "MaskedLM"

    def __init__(self, model, top_k=5, batch_size=32, model_kwargs=None):
        super().__init__(model, batch_size=batch_size, model_kwargs=model_kwargs)
        self.top_k = top_k

    @property
    def mask_token(self):
        """The mask token as the text writes it (``"[MASK]"``)."""
        return self.model.preprocessor.mask_token

    def __call__(self, inputs, top_k=None):
        """Fills the masks of ``inputs`` (a str or a list of str)."""
        texts, single = as_list(inputs)
        mask = self.mask_token
        missing = [t for t in texts if mask not in t]
        if missing:
            raise ValueError(f"No mask token {mask!r} in the text {missing[0]!r}: "
                             f"write {mask} where a token should be predicted.")
        found = self.model.fill_mask(texts, top_k=top_k or self.top_k,
                                     batch_size=self.batch_size)
        results = []
        for text, masks in zip(texts, found):
            rows = [[{"score": p["score"], "token": p["token_id"],
                      "token_str": p["token"],
                      "sequence": fill_text(text, mask, number, p["token"])}
                     for p in predictions]
                    for number, predictions in enumerate(masks)]
            results.append(rows[0] if len(rows) == 1 else rows)
        return results[0] if single else results


def fill_text(text, mask, number, token):
    """``text`` with its ``number``-th (from 0) ``mask`` replaced by ``token``;
    a word-piece continuation (``"##s"``) joins the word before it.

    Example:
    >>> fill_text("a [MASK] b [MASK]", "[MASK]", 1, "c")
    'a [MASK] b c'
    >>> fill_text("the cat [MASK]", "[MASK]", 0, "##s")
    'the cats'
    """
    parts = text.split(mask)
    before = mask.join(parts[:number + 1])
    after = mask.join(parts[number + 1:])
    if token.startswith("##") and len(token) > 2:
        before, token = before.rstrip(), token[2:]
    return before + token + after
