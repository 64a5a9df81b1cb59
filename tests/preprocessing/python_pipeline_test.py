"""kzoo.preprocessing.python_pipeline.PythonPasses: a reader waiting for a
batch when the passes are closed ends its pass (with TensorFlow that reader
is tf.data's prefetch thread, and one left waiting hung the process when
the iterator was deleted); closed passes refuse another pass."""

import threading
import time

import pytest

from kzoo.preprocessing.python_pipeline import PythonPasses


def test_a_waiting_reader_ends_when_the_passes_are_closed():
    produced, release = threading.Event(), threading.Event()

    def make_pass():
        yield 1
        produced.set()
        release.wait(30)  # the next batch is slow to come
        yield 2

    passes = PythonPasses(make_pass, passes=2)
    batches = passes.next_pass()
    read, ended = [], threading.Event()

    def reader():  # as tf.data's prefetch thread reads a pass
        read.extend(batches)
        ended.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    assert produced.wait(10)
    time.sleep(0.3)  # the reader waits on the empty queue
    assert not ended.is_set()
    passes.close(timeout=0.5)
    try:
        assert passes._reading == 0  # close() returns after the reader left
        assert ended.wait(5), "the reader still waits after close()"
        assert read == [1]
    finally:
        release.set()
        thread.join(5)
    with pytest.raises(ValueError, match=r"closed \(`close\(\)`\): make new ones"):
        passes.next_pass()


def test_passes_read_to_their_ends():
    passes = PythonPasses(lambda: iter([1, 2, 3]), passes=2,
                          end_value=iter(range(10)).__next__)
    assert [list(passes.next_pass()) for _ in range(2)] == [[1, 2, 3], [1, 2, 3]]
    assert passes.end_values == [0, 1, 2]
    assert passes.pass_ended
    passes.close()
