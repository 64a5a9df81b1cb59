"""`ShardBatches`: batches as functions of (seed, epoch, index); the
processes' parts; resuming an epoch; two real processes on localhost."""

import os
import socket
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from kzoo.data import ShardBatches, TokenShards, prepare
from kzoo.models.gpt.gpt_shards import GPTBlocks
from kzoo.testing.corpus import write_corpus

pytestmark = pytest.mark.without_tensorflow


class Rows(ShardBatches):
    """The examples of each batch, and one draw of its generator."""

    def make_batch(self, rows, generator):
        return np.asarray(rows), generator.random()


def batches(stream):
    return [stream[i] for i in range(len(stream))]


def test_an_epoch_is_a_permutation_set_by_seed_and_epoch():
    epoch0 = batches(Rows(103, 10, epoch=0, seed=1, shard=(0, 1)))
    assert len(epoch0) == 10  # the 3 left over make no batch
    rows = np.concatenate([r for r, _ in epoch0])
    assert len(set(rows.tolist())) == 100 and rows.max() < 103
    again = batches(Rows(103, 10, epoch=0, seed=1, shard=(0, 1), read_ahead=0))
    for (r1, g1), (r2, g2) in zip(epoch0, again):
        np.testing.assert_array_equal(r1, r2)
        assert g1 == g2  # the draws are the batch's, not the thread's
    epoch1 = batches(Rows(103, 10, epoch=1, seed=1, shard=(0, 1)))
    assert not np.array_equal(rows, np.concatenate([r for r, _ in epoch1]))
    # Asked out of order, each batch is the same.
    stream = Rows(103, 10, epoch=0, seed=1, shard=(0, 1))
    for i in (7, 2, 9, 0):
        np.testing.assert_array_equal(stream[i][0], epoch0[i][0])


@pytest.mark.parametrize("count", [2, 3])
def test_the_processes_together_read_the_single_stream_once(count):
    single = batches(Rows(1000, 16, epoch=2, seed=5, shard=(0, 1)))
    parts = [batches(Rows(1000, 16, epoch=2, seed=5, shard=(p, count)))
             for p in range(count)]
    steps = len(single) // count
    assert all(len(part) == steps for part in parts)
    for step in range(steps):
        for p in range(count):
            rows, draw = parts[p][step]
            np.testing.assert_array_equal(rows, single[step * count + p][0])
            assert draw == single[step * count + p][1]
    seen = np.concatenate([rows for part in parts for rows, _ in part])
    assert len(seen) == len(set(seen.tolist())) == steps * count * 16


def test_start_resumes_the_epoch_at_a_batch():
    full = batches(Rows(500, 8, epoch=1, seed=2, shard=(1, 2)))
    tail = batches(Rows(500, 8, epoch=1, seed=2, shard=(1, 2), start=11))
    assert len(tail) == len(full) - 11
    for (r1, g1), (r2, g2) in zip(full[11:], tail):
        np.testing.assert_array_equal(r1, r2)
        assert g1 == g2


def test_bad_arguments():
    with pytest.raises(ValueError, match="make no batch of 64 for each of 2"):
        Rows(100, 64, shard=(0, 2))
    with pytest.raises(ValueError, match="index"):
        Rows(100, 4, shard=(2, 2))
    with pytest.raises(ValueError, match="start"):
        Rows(100, 4, shard=(0, 1), start=26)


WORKER = textwrap.dedent("""
    import os, sys
    import numpy as np
    backend, rank, port, data, out = sys.argv[1:6]
    rank, port = int(rank), int(port)
    if backend == "torch":
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                                rank=rank, world_size=2)
    elif backend == "jax":
        import jax
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2,
                                   process_id=rank)
    import keras
    from kzoo.data import TokenShards, process_shard
    from kzoo.models.gpt.gpt_shards import GPTBlocks
    assert process_shard() == (rank, 2), process_shard()
    stream = GPTBlocks(TokenShards(data), 8, 4, epoch=1, seed=3)
    np.save(out, np.stack([stream[i][0]["token_ids"] for i in range(len(stream))]))
    if backend == "torch":
        dist.barrier()
        dist.destroy_process_group()
    elif backend == "jax":
        jax.distributed.shutdown()
""")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def gpt_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpt")
    corpus = folder / "corpus.txt"
    write_corpus(corpus, documents=60, sentences=(1, 2), words=(12, 13))
    return str(prepare("gpt", [str(corpus)], folder / "data",
                       options={"vocabulary_size": 280}, verbose=False).directory)


def test_two_processes_on_localhost_read_the_stream_between_them(tmp_path, gpt_data):
    backend = keras.config.backend()
    port = _free_port()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, KERAS_BACKEND=backend)
    if backend == "tensorflow":
        import json

        workers = [f"127.0.0.1:{_free_port()}" for _ in range(2)]
    runs = []
    for rank in range(2):
        if backend == "tensorflow":
            env = dict(env, TF_CONFIG=json.dumps(
                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}))
        runs.append(subprocess.Popen(
            [sys.executable, str(script), backend, str(rank), str(port), gpt_data,
             str(tmp_path / f"rank{rank}.npy")], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for run in runs:
        out = run.communicate(timeout=300)[0]
        assert run.returncode == 0, out[-3000:]
    single = GPTBlocks(TokenShards(gpt_data), 8, 4, epoch=1, seed=3, shard=(0, 1))
    expected = np.stack([single[i][0]["token_ids"] for i in range(len(single))])
    parts = [np.load(tmp_path / f"rank{rank}.npy") for rank in range(2)]
    steps = len(single) // 2
    assert parts[0].shape[0] == parts[1].shape[0] == steps
    together = np.stack(parts, axis=1).reshape(-1, *expected.shape[1:])
    np.testing.assert_array_equal(together, expected[:2 * steps])
