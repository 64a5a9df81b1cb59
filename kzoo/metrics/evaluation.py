"""Evaluation helpers: held-out measures computed with a task's ``evaluate``."""

import math


def evaluate_perplexity(model, x, y=None, batch_size=64):
    """``(perplexity, loss)`` of a language model on held-out data:
    ``exp`` of the mean loss ``model.evaluate`` reports (per predicted
    token, the loss being the token cross-entropy).

    Example:
    >>> class Fixed:  # any model with Keras' ``evaluate``
    ...     def evaluate(self, x, y, batch_size, verbose, return_dict):
    ...         return {"loss": math.log(4.0)}
    >>> evaluate_perplexity(Fixed(), x=None)
    (4.0, 1.3862943611198906)
    """
    loss = model.evaluate(x, y, batch_size=batch_size, verbose=0,
                          return_dict=True)["loss"]
    return math.exp(loss), loss
