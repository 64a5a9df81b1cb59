"""word2vec's linearly decaying learning rate."""

import keras
from keras import ops

from kzoo.api_export import kzoo_export

_NUMBERS = ("alpha", "min_alpha", "decay_steps", "start_step", "scale")


@kzoo_export("kzoo.models.Word2VecLearningRate")
class Word2VecLearningRate(keras.optimizers.schedules.LearningRateSchedule):
    """`alpha` falling linearly to `min_alpha` over `decay_steps`, as gensim.

    word2vec.c and gensim decay the learning rate linearly with the share of
    the training words processed; here with the share of the steps taken
    since `start_step` (the step count is the optimizer's). The rate is
    multiplied by `scale`: a task whose loss is the mean over a batch of
    `b` examples uses `scale=b`, so that each example moves the vectors as
    much as one word2vec update with rate `alpha` would.

    Args:
        alpha: float. Initial per-example learning rate (0.025 in gensim).
        min_alpha: float. Final rate (gensim: 0.0001).
        decay_steps: int. Steps over which the rate falls.
        start_step: int. Optimizer step at which the decay starts.
        scale: float. Factor applied to the rate.

    Example:
    >>> lr = kzoo.models.Word2VecLearningRate(0.025, 0.0001, decay_steps=100)
    >>> [round(float(lr(s)), 6) for s in (0, 50, 100, 200)]
    [0.025, 0.01255, 0.0001, 0.0001]
    """

    def __init__(self, alpha=0.025, min_alpha=0.0001, decay_steps=1,
                 start_step=0, scale=1.0):
        self._values = None
        self.set(alpha=alpha, min_alpha=min_alpha, decay_steps=decay_steps,
                 start_step=start_step, scale=scale)

    def set(self, **numbers):
        """Changes any of `alpha`, `min_alpha`, `decay_steps`, `start_step`,
        `scale`; once `attach`ed, in the optimizer's variable too, so a
        compiled training step takes the new numbers without retracing."""
        for name, value in numbers.items():
            if name not in _NUMBERS:
                raise TypeError(f"Unknown schedule number {name!r}; "
                                f"expected one of {_NUMBERS}.")
            setattr(self, name, float(value))
        self.decay_steps = max(int(self.decay_steps), 1)
        self.start_step = int(self.start_step)
        if self._values is not None:
            self._values.assign(self._numbers())

    def attach(self, optimizer):
        """Keeps the numbers in a variable of `optimizer` (saved with its
        state), read by every call from then on."""
        self._values = optimizer.add_variable(
            shape=(len(_NUMBERS),), dtype="float32", name="word2vec_schedule",
            initializer=keras.initializers.Constant(self._numbers()))

    def _numbers(self):
        return [float(getattr(self, name)) for name in _NUMBERS]

    def __call__(self, step):
        if self._values is None:
            alpha, min_alpha, decay_steps, start_step, scale = self._numbers()
        else:
            alpha, min_alpha, decay_steps, start_step, scale = ops.unstack(
                ops.convert_to_tensor(self._values))
        progress = (ops.cast(step, "float32") - start_step) / decay_steps
        progress = ops.clip(progress, 0.0, 1.0)
        return (alpha + (min_alpha - alpha) * progress) * scale

    def get_config(self):
        return {"alpha": self.alpha, "min_alpha": self.min_alpha,
                "decay_steps": self.decay_steps, "start_step": self.start_step,
                "scale": self.scale}
