"""Stop strings: end a row when its text reaches a stop string, as
transformers' ``StopStringCriteria`` decides it, with tensor ops only."""

import numpy as np
from keras import ops


class StopStrings:
    """Whether each row's text has just reached a stop string.

    A row stops when one of the strings occurs in its decoded text (prompt
    included) and the occurrence ends inside the last token: the string ends
    where the last token does or the token runs past it (``"st" "op"``,
    ``"las" "topper"``, ``"st" "opera"``), also wholly inside the last token
    (``"he"`` in ``"the"``), as transformers' ``StopStringCriteria``
    decides. Each token's bytes are known beforehand, so the check walks back
    over the last tokens with small per-token tables (``[vocabulary,
    len(string) + 1]``), no text.

    Args:
        stop_strings: a tuple of non-empty str.
        token_bytes: the bytes of each token id (a list of bytes).
    """

    def __init__(self, stop_strings, token_bytes):
        self.stop_strings = tuple(stop_strings)
        self._token_bytes = list(token_bytes)
        self._encoded = [s.encode("utf-8") for s in self.stop_strings]
        self.tables = [self._tables(s.encode("utf-8"), token_bytes)
                       for s in self.stop_strings]

    @staticmethod
    def _tables(stop, token_bytes):
        """For one stop string of m bytes, per token (and one extra row, a
        token that matches nothing, for positions before the text):
        ``first[t, r]``: the last token leaves r bytes of the string before
        it (its start equals the string's last m - r bytes; r = 0: done, also
        where the string lies wholly inside the token);
        ``inside[t, r]``: a token ending r bytes into the string equals those
        bytes exactly (it leaves r - len(t)); ``over[t, r]``: it ends with the
        string's first r bytes (done)."""
        m = len(stop)
        rows = len(token_bytes) + 1
        first = np.zeros((rows, m + 1), bool)
        inside = np.zeros((rows, m + 1), bool)
        over = np.zeros((rows, m + 1), bool)
        lengths = np.zeros((rows,), "int32")
        for t, token in enumerate(token_bytes):
            lengths[t] = len(token)
            for i in range(1, min(m, len(token)) + 1):
                if token[:i] == stop[m - i:]:
                    first[t, m - i] = True
            if stop in token:
                first[t, 0] = True
            for r in range(1, m + 1):
                if len(token) <= r and token and token == stop[r - len(token):r]:
                    inside[t, r] = True
                elif len(token) > r and token[-r:] == stop[:r]:
                    over[t, r] = True
        return m, first, inside, over, lengths

    def __call__(self, token_ids, index):
        """bool ``[rows]``: the token at position ``index`` of ``token_ids``
        ``[rows, length]`` completes a stop string."""
        rows = ops.shape(token_ids)[0]
        token_ids = ops.cast(token_ids, "int32")
        hit = ops.zeros((rows,), "bool")
        for m, first, inside, over, lengths in self.tables:
            never = first.shape[0] - 1

            def token_at(back):
                position = index - back
                column = ops.maximum(position, 0)
                token = ops.squeeze(ops.slice(token_ids, (0, column), (rows, 1)), axis=1)
                return ops.where(position >= 0, token, never)

            last = token_at(0)
            # remaining[:, r]: the tokens so far can end the string's first r bytes.
            remaining = ops.take(ops.convert_to_tensor(first), last, axis=0)
            done = remaining[:, 0]
            width = ops.arange(m + 1, dtype="int32")[None, :]
            for back in range(1, m):
                token = token_at(back)
                fits = ops.logical_and(remaining, ops.take(ops.convert_to_tensor(inside),
                                                           token, axis=0))
                done = ops.logical_or(done, ops.any(ops.logical_and(
                    remaining, ops.take(ops.convert_to_tensor(over), token, axis=0)),
                    axis=1))
                # Each fitting r moves to r - len(token).
                shift = ops.take(ops.convert_to_tensor(lengths), token, axis=0)[:, None]
                moved = ops.zeros_like(remaining)
                for r in range(1, m + 1):
                    moved = ops.logical_or(moved, ops.logical_and(
                        fits[:, r:r + 1], width == r - shift))
                done = ops.logical_or(done, moved[:, 0])
                remaining = ops.logical_and(moved, width > 0)
            hit = ops.logical_or(hit, done)
        return hit

    def first_stop(self, row, start):
        """The first position ``>= start`` of the ints ``row`` whose token
        completes a stop string (the same rule, on the host: an occurrence
        ending inside that token), or None."""
        token_bytes = self._token_bytes
        text = b"".join(token_bytes[t] for t in row[:start])
        for position in range(start, len(row)):
            begin = len(text)
            text += token_bytes[row[position]]
            for stop in self._encoded:
                # An occurrence starting there or later ends in the last token.
                if text.find(stop, max(0, begin - len(stop) + 1)) != -1:
                    return position
        return None
