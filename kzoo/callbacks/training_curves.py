"""Loss and metric curves as a PNG, redrawn at the end of every epoch."""

import csv
import os

import keras


class TrainingCurves(keras.callbacks.Callback):
    """Draws the loss and each metric per epoch into ``path`` (a PNG).

    One panel per quantity (``loss``, ``accuracy``, ...), the training curve
    and, when ``fit`` validates, the ``val_`` curve in the same panel. The
    file is rewritten after every epoch (atomically: a reader never sees a
    half-written image), so it can be watched while training runs; it sits
    beside ``keras.callbacks.TensorBoard``, which needs a server to look at.
    The plotted values are written beside it as a CSV (``curves.png`` ->
    ``curves.csv``: an ``epoch`` column, then one column per curve, empty
    where a curve has no value for that epoch).

    Needs matplotlib (``pip install 'kzoo[analysis]'``); the error says so.

    Args:
        path: str. The PNG to write.
        history: dict or None. Curves of earlier epochs (a resumed run), as
            ``History.history``: new epochs are appended to them.
        title: str or None. Shown above the panels.

    Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "curves.png")
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse", metrics=["mae"])
    >>> _ = model.fit(np.ones((8, 2)), np.ones((8, 1)), epochs=2, verbose=0,
    ...               validation_data=(np.ones((4, 2)), np.ones((4, 1))),
    ...               callbacks=[kzoo.callbacks.TrainingCurves(path)])
    >>> os.path.getsize(path) > 0
    True
    """

    def __init__(self, path, history=None, title=None):
        super().__init__()
        try:
            import matplotlib  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "TrainingCurves draws with matplotlib, which is not installed: "
                "pip install 'kzoo[analysis]' (or matplotlib)."
            ) from exc
        self.path = path
        self.history = {k: list(v) for k, v in (history or {}).items()}
        self.title = title

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        self.draw()

    def draw(self):
        """Writes the PNG from ``self.history``."""
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt

        names = [k for k in self.history if not k.startswith("val_")
                 and k not in ("learning_rate", "words_per_sec")]
        if not names:
            return
        names.sort(key=lambda k: (k != "loss", k))
        columns = min(len(names), 3)
        rows = -(-len(names) // columns)
        fig, axes = plt.subplots(rows, columns, squeeze=False,
                                 figsize=(4.2 * columns, 3.2 * rows))
        plotted = {}  # the values drawn, by history key
        for ax, name in zip(axes.flat, names):
            for key, label, style in ((name, "training", "o-"),
                                      (f"val_{name}", "validation", "s--")):
                values = self.history.get(key)
                if values:
                    plotted[key] = values
                    ax.plot(range(1, len(values) + 1), values, style, label=label,
                            markersize=3)
            ax.set_title(name)
            ax.set_xlabel("epoch")
            ax.grid(alpha=0.3)
            ax.xaxis.get_major_locator().set_params(integer=True)
            ax.legend(fontsize="small")
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        if self.title:
            fig.suptitle(self.title)
        fig.tight_layout()
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        tmp = self.path + ".tmp.png"
        fig.savefig(tmp, dpi=100)
        plt.close(fig)
        os.replace(tmp, self.path)
        self._write_csv(plotted)

    def csv_path(self):
        """The CSV of the plotted values, beside the PNG."""
        return os.path.splitext(self.path)[0] + ".csv"

    def _write_csv(self, plotted):
        epochs = max((len(values) for values in plotted.values()), default=0)
        tmp = self.csv_path() + ".tmp"
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["epoch", *plotted])
            for epoch in range(epochs):
                writer.writerow([epoch + 1, *(repr(v[epoch]) if epoch < len(v) else ""
                                              for v in plotted.values())])
        os.replace(tmp, self.csv_path())
