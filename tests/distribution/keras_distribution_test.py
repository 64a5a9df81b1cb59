"""keras.distribution on 8 simulated JAX devices: DataParallel equals one
device, ModelParallel shards the large kernels and trains to the same loss,
and bad meshes, batches and layouts fail before any step."""

import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import kzoo
from kzoo.distribution import keras_distribution
from tests.distribution import tiny_models

pytestmark = pytest.mark.backends("jax")


def _fit(model, x, y=None, batch_size=8):
    steps = tiny_models.StepLosses()
    model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0,
              callbacks=[steps])
    return steps.losses


def _max_difference(a, b):
    return max(float(np.abs(u - v).max()) for u, v in zip(a, b))


def test_eight_devices_are_found():
    assert len(kzoo.distribution.devices()) == 8


def test_data_parallel_equals_one_device(monkeypatch):
    reference = tiny_models.bert_classifier()
    initial = reference.get_weights()
    one_device = _fit(reference, tiny_models.TEXTS, tiny_models.LABELS)

    split = []
    original = keras_distribution._CheckedDataParallel.get_data_layout

    def spy(self, data_shape):
        split.append(data_shape[0])
        return original(self, data_shape)

    monkeypatch.setattr(keras_distribution._CheckedDataParallel, "get_data_layout", spy)
    distribution = kzoo.distribution.data_parallel(batch_size=8)
    with distribution.scope():
        model = tiny_models.bert_classifier()
        model.set_weights(initial)
        eight_devices = _fit(model, tiny_models.TEXTS, tiny_models.LABELS)
        kernel = model.backbone.token_embedding.embeddings.value
    assert len(kernel.sharding.device_set) == 8  # a replica on every device
    assert split and set(split) == {8}  # the batches went through the split
    assert len(one_device) == 3
    np.testing.assert_allclose(eight_devices, one_device, atol=1e-5)
    assert _max_difference(model.get_weights(), reference.get_weights()) <= 1e-5
    assert _max_difference(reference.get_weights(), initial) > 1e-3  # it trained


def _expected_spec(backbone_cls, path):
    layouts = backbone_cls.get_layout_map(
        keras.distribution.DeviceMesh((2, 4), ("batch", "model"),
                                      [f"cpu:{i}" for i in range(8)]))
    pattern = kzoo.distribution.layout.matching_rules(layouts, path)
    return tuple(layouts[pattern[0]].axes) if pattern else None


@pytest.mark.parametrize("make, data", [
    (tiny_models.bert_classifier, (tiny_models.TEXTS, tiny_models.LABELS)),
    (tiny_models.gpt_causal_lm, (tiny_models.LM_TEXTS,)),
    (tiny_models.elmo_language_model, (tiny_models.ELMO_TEXTS,)),
], ids=["bert", "gpt", "elmo"])
def test_model_parallel_shards_and_trains_like_one_device(make, data, request):
    # Run in a fresh process: in a pytest worker that had run hundreds of
    # tests with TensorFlow, PyTorch and JAX loaded, this program on 8
    # simulated devices crashed the process twice (SIGSEGV-like, no Python
    # traceback) where alone it never did; a fresh process is what a user's
    # script is, and faulthandler prints the native stack if it ever crashes.
    if os.environ.get("KZOO_TEST_IN_SUBPROCESS") != "1":
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        result = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-m", "pytest", "-q", "-p", "no:xdist",
             "-p", "no:randomly", request.node.nodeid],
            cwd=root, env=dict(os.environ, KZOO_TEST_IN_SUBPROCESS="1"),
            capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
        assert "1 passed" in result.stdout, result.stdout[-3000:]
        return
    reference = make()
    initial = reference.get_weights()
    one_device = _fit(reference, *data)[:2]

    distribution = kzoo.distribution.model_parallel(
        type(reference.backbone), shape=(2, 4), batch_size=8)
    with distribution.scope():
        model = make()
        model.set_weights(initial)
        sharded = 0
        for variable in model.weights:
            expected = _expected_spec(type(model.backbone), variable.path)
            spec = tuple(variable.value.sharding.spec)
            spec += (None,) * (len(variable.shape) - len(spec))
            if expected is None or "model" not in expected:
                assert "model" not in spec, variable.path
            else:
                assert spec == expected, (variable.path, spec, expected)
                sharded += 1
        assert sharded >= 6
        two_steps = []
        steps = tiny_models.StepLosses()
        model.fit(*data, batch_size=8, epochs=1, shuffle=False, verbose=0,
                  callbacks=[steps])
        two_steps = steps.losses[:2]
    np.testing.assert_allclose(two_steps, one_device, rtol=1e-5, atol=1e-5)
    assert _max_difference(model.get_weights(), reference.get_weights()) <= 1e-4


def test_bad_meshes_batches_and_layouts_fail_before_any_step():
    with pytest.raises(ValueError, match=r"shape \(3, 2\) needs 6 devices, but 8"):
        kzoo.distribution.model_parallel(kzoo.BertBackbone, shape=(3, 2))
    with pytest.raises(ValueError, match="batch of 12 examples .* 8 data-parallel"):
        kzoo.distribution.data_parallel(batch_size=12)
    with pytest.raises(ValueError, match="batch of 6 examples .* 4 data-parallel"):
        kzoo.distribution.model_parallel(kzoo.BertBackbone, shape=(4, 2), batch_size=6)

    # 2 heads cannot be split over a model axis of 4; the model is untouched.
    model = tiny_models.bert_classifier(num_heads=2)
    before = model.predict(tiny_models.TEXTS[:4], verbose=0)
    with pytest.raises(ValueError, match=r"query/kernel' \(shape \(8, 2, 4\)\).*"
                                         r"axis 1 has 2 entries.*size 4"):
        kzoo.distribution.model_parallel(model, shape=(2, 4))
    np.testing.assert_array_equal(model.predict(tiny_models.TEXTS[:4], verbose=0),
                                  before)
    # The same when the variables are created inside the scope.
    distribution = kzoo.distribution.model_parallel(kzoo.BertBackbone, shape=(2, 4))
    with pytest.raises(ValueError, match="axis 1 has 2 entries"):
        with distribution.scope():
            tiny_models.bert_classifier(num_heads=2)

    mesh = keras.distribution.DeviceMesh((2, 4), ("batch", "model"),
                                         kzoo.distribution.devices())
    typo = kzoo.distribution.layout_map(mesh, {r"feedforward_dense/kernel": (None, "model")})
    with pytest.raises(ValueError, match="feedforward_dense/kernel.*match no variable"):
        kzoo.distribution.model_parallel(model, shape=(2, 4), layout_map=typo)


def test_word2vec_tables_split_by_rows_train_like_one_device():
    rng = np.random.default_rng(0)
    tables = rng.normal(size=(2, 12, 4)).astype("float32")
    batch = {"center": rng.integers(0, 12, 8), "context": rng.integers(0, 12, 8),
             "negatives": rng.integers(0, 12, (8, 3))}
    labels = np.tile(np.array([1, 0, 0, 0], "float32"), (8, 1))

    def train():
        backbone = kzoo.Word2VecBackbone(vocabulary_size=12, hidden_dim=4)
        backbone.set_weights(list(tables))
        model = kzoo.Word2VecSkipGram(backbone)
        model.compile(optimizer=keras.optimizers.SGD(0.5))
        losses = [float(model.train_on_batch(batch, labels)) for _ in range(2)]
        return model, losses

    reference, one_device = train()
    distribution = kzoo.distribution.model_parallel(
        kzoo.Word2VecBackbone, shape=(2, 4), batch_size=8)
    with distribution.scope():
        model, sharded = train()
        for variable in model.backbone.weights:
            assert tuple(variable.value.sharding.spec) == ("model", None), variable.path
    np.testing.assert_allclose(sharded, one_device, rtol=1e-6)
    assert _max_difference(model.get_weights(), reference.get_weights()) <= 1e-6
    assert _max_difference(reference.get_weights(), list(tables)) > 1e-3
