"""Each helper drives one engine: on a backend without it, a clear error that
names the way that works there; tpu_strategy without a TPU says so."""

import keras
import pytest

import kzoo

BACKEND = keras.config.backend()


@pytest.mark.skipif(BACKEND != "torch", reason="keras.distribution exists here")
@pytest.mark.parametrize("call", [
    lambda: kzoo.distribution.data_parallel(),
    lambda: kzoo.distribution.model_parallel(kzoo.BertBackbone, shape=(1, 1)),
    lambda: kzoo.distribution.devices(),
], ids=["data_parallel", "model_parallel", "devices"])
def test_keras_distribution_helpers_point_torch_users_to_ddp(call):
    with pytest.raises(RuntimeError, match="does not provide on the torch backend.*torch_ddp"):
        call()


@pytest.mark.skipif(BACKEND == "tensorflow", reason="tf.distribute trains here")
def test_tf_distribute_helpers_need_the_tensorflow_backend():
    for call in (kzoo.distribution.mirrored_strategy, kzoo.distribution.tpu_strategy):
        with pytest.raises(RuntimeError, match=f"the backend is {BACKEND}.*KERAS_BACKEND=tensorflow"):
            call()


@pytest.mark.skipif(BACKEND == "torch", reason="torch.distributed trains here")
def test_torch_ddp_needs_the_torch_backend():
    with pytest.raises(RuntimeError, match="needs KERAS_BACKEND=torch"):
        kzoo.distribution.torch_ddp.fit(None, [])


@pytest.mark.skipif(BACKEND == "jax", reason="JAX multi-process runs here")
def test_initialize_needs_jax():
    with pytest.raises(RuntimeError, match="starts a JAX multi-process run"):
        kzoo.distribution.initialize("127.0.0.1:1234", 2, 0)


@pytest.mark.backends("jax")
def test_initialize_checks_its_arguments_before_starting():
    with pytest.raises(ValueError, match="Give all of .* or none"):
        kzoo.distribution.initialize("127.0.0.1:1234", num_processes=2)
    with pytest.raises(ValueError, match="process_id=2 is outside 0 .. num_processes - 1 = 1"):
        kzoo.distribution.initialize("127.0.0.1:1234", 2, 2)


@pytest.mark.backends("tensorflow")
@pytest.mark.parametrize("tpu", ["local", None, "no-such-tpu"])
def test_tpu_strategy_without_a_tpu_says_so(tpu):
    with pytest.raises(kzoo.distribution.TPUNotFoundError,
                       match=f"No TPU found for tpu={tpu!r}.*mirrored_strategy"):
        kzoo.distribution.tpu_strategy(tpu)


@pytest.mark.backends("torch")
def test_torch_ddp_checks_the_batch_and_the_environment(monkeypatch):
    from tests.distribution import tiny_models

    model = tiny_models.bert_classifier()
    with pytest.raises(ValueError, match="make no full global batch of 64"):
        kzoo.distribution.torch_ddp.fit(model, tiny_models.TEXTS, tiny_models.LABELS,
                                        batch_size=64)
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(RuntimeError, match=r"lacks \['RANK'.*torchrun"):
        kzoo.distribution.torch_ddp.init_process_group()
