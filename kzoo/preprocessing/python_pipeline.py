"""The Python engine's counterpart of `kzoo.preprocessing.pipeline`.

`PythonPasses` gives what `Passes` gives (several passes over a stream of
batches, one per epoch, read ahead while the model trains) without
TensorFlow: a background thread produces the batches (numpy arrays) into a
bounded queue, as `tf.data`'s prefetch does. numpy releases the GIL in its
large vector operations and the backends release it while their steps run,
so the producer and the training loop overlap.
"""

import queue
import threading

from kzoo.preprocessing.engine import engine_scope
from kzoo.preprocessing.preprocessing_layer import numpy_outputs

_BATCH, _END, _ERROR, _DONE = range(4)
#: how often a reader waiting for a batch checks whether the passes were closed
_POLL_SECONDS = 0.1


def _put(items, stop, item):
    """Puts `item` in the queue unless `stop` is set first (then False)."""
    while not stop.is_set():
        try:
            items.put(item, timeout=0.1)
            return True
        except queue.Full:
            continue
    return False


def _produce(make_pass, passes, read, items, stop):
    """`PythonPasses`' thread: the passes' batches and end markers."""
    try:
        with engine_scope("python"), numpy_outputs():
            for _ in range(passes):
                for batch in make_pass():
                    if not _put(items, stop, (_BATCH, batch)):
                        return
                if not _put(items, stop, (_END, max(int(read()), 0))):
                    return
        _put(items, stop, (_DONE, None))
    except BaseException as error:  # raised in the training thread
        _put(items, stop, (_ERROR, error))


class PassReader:
    """What `Passes` and `PythonPasses` share: handing Keras one pass at a
    time from a stream of batches with an end marker after each pass.
    Subclasses set `passes`, `empty_error`, `end_values` and the counters
    `_handed` / `_ended`, and implement `_next()` (the next batch, or None
    at a pass's end, recording its end value)."""

    @property
    def pass_ended(self):
        """Whether the last pass handed out was read to its end (its end
        value is `end_values[-1]`, its start's `end_values[-2]`)."""
        return self._handed > 0 and self._ended == self._handed

    def next_pass(self):
        """A generator of the next pass's batches (the rest of the previous
        pass, if Keras stopped before its end, is skipped; its first batch
        is read here: a pass without any raises)."""
        if self._handed >= self.passes:
            raise ValueError(f"All {self.passes} passes were handed out.")
        while self._ended < self._handed:
            self._next()
        self._handed += 1
        first = self._next()
        if first is None:
            raise ValueError(self.empty_error)

        def batches():
            batch = first
            while batch is not None:
                yield batch
                batch = self._next()

        return batches()


class PythonPasses(PassReader):
    """Several passes over a Python stream of batches, one pass per epoch.

    The interface of `kzoo.preprocessing.pipeline.Passes` (`end_values`,
    `pass_ended`, `next_pass`, `keras_input`), fed by a thread that calls
    `make_pass()` once per pass and reads its batches ahead, on the Python
    preprocessing engine (its preprocessing layers return numpy arrays
    there). The thread starts reading at construction; `close()` stops it
    (it is a daemon thread: an unclosed one does not keep a program alive).

    Args:
        make_pass: a function of no arguments returning an iterable of
            batches (any structure of numpy arrays): one pass.
        passes: int. Passes to make.
        end_value: None or a function of no arguments returning an int,
            called in the thread at the end of each pass (after the pass's
            last batch, before the next pass starts): its values are
            `end_values` (the first read when the passes start).
        buffer: int. Batches read ahead.
        empty_error: str. The message of the `ValueError` that `next_pass`
            raises for a pass without batches.
    """

    def __init__(self, make_pass, passes, end_value=None, buffer=4,
                 empty_error="A pass over the dataset gave no batches."):
        self.passes = passes
        self.empty_error = empty_error
        self._read = end_value or (lambda: 0)
        self.end_values = [int(self._read())]
        self._handed = 0  # passes handed to Keras
        self._ended = 0  # end markers read
        self._queue = queue.Queue(maxsize=max(int(buffer), 1))
        self._stop = threading.Event()
        self._readers = threading.Condition()  # `_reading`: threads in `_get`
        self._reading = 0
        # The thread holds no reference to `self`: an abandoned object is
        # collected, and its `__del__` stops the thread.
        self._thread = threading.Thread(
            target=_produce, daemon=True, name="kzoo-python-passes",
            args=(make_pass, passes, self._read, self._queue, self._stop))
        self._thread.start()

    def _next(self):
        """The next batch, or None at the end of a pass; None too once
        `close()` is called.

        A reader waiting here must see `close()`: with TensorFlow, Keras
        reads a pass ahead in tf.data's prefetch thread, and the pass ends
        there only when this returns. Left waiting on a queue no thread
        fills, that thread never ends, and deleting the iterator (Keras
        drops it after `fit`; TensorFlow waits for the thread while holding
        the GIL) hangs the process at its next garbage collection."""
        kind, value = self._get()
        if kind is None:  # closed
            return None
        if kind == _ERROR:
            self.close()
            raise value
        if kind == _DONE:
            raise ValueError(f"All {self.passes} passes were read.")
        if kind == _END:
            self._ended += 1
            self.end_values.append(value)
            return None
        return value

    def _get(self):
        """The queue's next item, or (None, None) once closed; `close()`
        waits for the readers in here to leave."""
        with self._readers:
            self._reading += 1
        try:
            while True:
                try:
                    return self._queue.get(timeout=_POLL_SECONDS)
                except queue.Empty:
                    if self._stop.is_set():
                        return None, None
        finally:
            with self._readers:
                self._reading -= 1
                self._readers.notify_all()

    def next_pass(self):
        if self._stop.is_set() and self._handed < self.passes:
            raise ValueError(
                "These passes were closed (`close()`): make new ones to read "
                "the data again.")
        return super().next_pass()

    def keras_input(self):
        """The next pass as a generator, which `keras.Model.fit` reads on
        every backend."""
        return self.next_pass()

    def close(self, timeout=10.0):
        """Stops the producing thread (batches not read yet are dropped) and
        waits up to `timeout` seconds for it to end (it ends after the
        batch it is making) and for any reader waiting for a batch to
        return (it returns the end of its pass within `_POLL_SECONDS`)."""
        self._stop.set()
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        with self._readers:
            self._readers.wait_for(lambda: self._reading == 0, timeout)
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def __del__(self):
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()
