"""Raw text in memory: tf.data vs the Python engine, per call and per example.

What ``kzoo.preprocessing.engine.data_engine`` (which engine a task's
``fit`` / ``evaluate`` / ``predict`` uses for lists of strings) is chosen
from: for each number of sentences, the wall and CPU time of

* preprocessing only: building the task's input pipeline and reading all
  its batches (``tf.data`` with the preprocessor mapped, or the Python
  engine's ``PreprocessedBatches``);
* ``predict``: the same plus all-MiniLM-L6-v2's forward pass.

The sentences are ``mixed_requests``' mix (empty, one word, a sentence, 600
words, cut to the sequence length). Run once per backend, from the
repository root, on an idle machine:

    KERAS_BACKEND=jax python bench/preprocessing_engines.py
    KERAS_BACKEND=torch python bench/preprocessing_engines.py --predict-sizes 1,8
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402

from kzoo.preprocessing import engine  # noqa: E402
from tests.robustness.concurrent_predict_test import mixed_requests  # noqa: E402


def _read_all(task, texts):
    data = task._preprocess_dataset(texts, passes=1)
    if isinstance(data, keras.utils.PyDataset):
        for i in range(len(data)):
            data[i]
    else:
        for _ in data.as_numpy_iterator():
            pass


def _time(call, reps):
    call()  # warm: traces, compiles, first tokenizer use
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(reps):
        call()
    return ((time.perf_counter() - wall) / reps,
            (time.process_time() - cpu) / reps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,8,32,1000,10000",
                        help="sentences per call, preprocessing only")
    parser.add_argument("--predict-sizes", default="1,8,32,256",
                        help="sentences per call, predict")
    parser.add_argument("--reps", type=int, default=5,
                        help="timed calls per row (one above 100 sentences)")
    args = parser.parse_args()

    from kzoo.models.bert.bert_text_embedder import BertTextEmbedder

    task = BertTextEmbedder.from_preset("minilm_l6_en_uncased")
    texts = mixed_requests(max(int(n) for n in args.sizes.split(",")), long_words=600)
    print(f"backend {keras.config.backend()}; wall / CPU seconds per call")
    print(f"{'what':12s} {'sentences':>9s} {'tf.data':>17s} {'python':>17s}")
    for what, sizes in (("preprocess", args.sizes), ("predict", args.predict_sizes)):
        for n in (int(s) for s in sizes.split(",") if s):
            x = (texts * (n // len(texts) + 1))[:n]
            row = []
            for name in ("tensorflow", "python"):
                with engine.engine_scope(name):
                    if what == "predict":
                        call = lambda: task.predict(x, verbose=0)  # noqa: E731
                    else:
                        call = lambda: _read_all(task, x)  # noqa: E731
                    wall, cpu = _time(call, args.reps if n <= 100 else 1)
                row.append(f"{wall:8.3f} / {cpu:6.3f}")
            print(f"{what:12s} {n:9d} {row[0]:>17s} {row[1]:>17s}", flush=True)


if __name__ == "__main__":
    main()
