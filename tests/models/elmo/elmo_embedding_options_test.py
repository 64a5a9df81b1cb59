"""ElmoEmbedding with AllenNLP ``Elmo``'s options, against AllenNLP's
computation written out in numpy from ``allennlp/modules/elmo.py``
(``Elmo.forward``, ``_ElmoBiLm.forward``), ``allennlp/modules/scalar_mix.py``
(``ScalarMix.forward``) and ``allennlp/nn/util.py``
(``remove_sentence_boundaries``). AllenNLP itself does not install beside
this stack (it pins torch < 1.13)."""

import keras
import numpy as np
import pytest

from kzoo.models.elmo.elmo_backbone import ElmoBackbone
from kzoo.models.elmo.elmo_embedding import ElmoEmbedding
from kzoo.preprocessing import CharacterIds
from kzoo.testing import assert_allclose, to_numpy

TINY = dict(num_layers=2, hidden_dim=8, projection_dim=4, filters=((1, 4), (2, 4)),
            character_dim=3, max_word_length=10, dropout=0.0)
SENTENCES = ["the river bank", "a bank", ""]
VOCABULARY = ["@@PADDING@@", "the", "river", "bank", "a"]
WORD_IDS = np.array([[1, 2, 3], [4, 3, 0], [0, 0, 0]], "int32")


@pytest.fixture(scope="module")
def backbone():
    keras.utils.set_random_seed(1)
    return ElmoBackbone(**TINY)


@pytest.fixture(scope="module")
def chars():
    return to_numpy(CharacterIds(max_word_length=10)(SENTENCES)["character_ids"])


def bilm_activations(backbone):
    """``_ElmoBiLm.forward``: the token layer twice (times the mask), then
    each LSTM layer, with <S> and </S>; and the mask with them."""
    inputs = CharacterIds(max_word_length=10, add_sentence_boundaries=True)(SENTENCES)
    out = to_numpy(backbone(inputs))
    mask = to_numpy(inputs["padding_mask"]).astype("float32")
    token = out["token_output"]
    layers = [np.concatenate([token, token], -1) * mask[..., None]]
    layers += [out[f"lstm_output_{i + 1}"] for i in range(TINY["num_layers"])]
    return layers, mask


def scalar_mix(tensors, mask, weights, gamma, do_layer_norm):
    """``ScalarMix.forward``."""
    w = np.exp(weights - np.max(weights))
    w = w / w.sum()
    if not do_layer_norm:
        return gamma * sum(w[k] * t for k, t in enumerate(tensors))
    broadcast_mask = mask[..., None]
    count = mask.sum() * tensors[0].shape[-1]

    def layer_norm(t):
        masked = t * broadcast_mask
        mean = masked.sum() / count
        variance = (((masked - mean) * broadcast_mask) ** 2).sum() / count
        return (t - mean) / np.sqrt(variance + 1e-12)

    return gamma * sum(w[k] * layer_norm(t) for k, t in enumerate(tensors))


def remove_sentence_boundaries(tensor, mask):
    """``remove_sentence_boundaries``: row i's positions 1..len-2, zeros after."""
    lengths = mask.sum(1).astype(int)
    out = np.zeros((tensor.shape[0], tensor.shape[1] - 2, tensor.shape[2]), tensor.dtype)
    new_mask = np.zeros(out.shape[:2], bool)
    for i, j in enumerate(lengths):
        if j > 2:
            out[i, :j - 2] = tensor[i, 1:j - 1]
            new_mask[i, :j - 2] = True
    return out, new_mask


def allennlp_elmo(backbone, mixes, do_layer_norm=False, keep_sentence_boundaries=False):
    """``Elmo.forward`` without dropout: one representation per ``(weights,
    gamma)`` in ``mixes``, and the mask."""
    layers, mask = bilm_activations(backbone)
    outputs = []
    for weights, gamma in mixes:
        x = scalar_mix(layers, mask, np.asarray(weights, "float64"), gamma, do_layer_norm)
        if keep_sentence_boundaries:
            out_mask = mask.astype(bool)
        else:
            x, out_mask = remove_sentence_boundaries(x, mask)
        outputs.append(x)
    return outputs, out_mask


def set_mixes(embedding, mixes):
    for mix, (weights, gamma) in zip(embedding.scalar_mixes, mixes):
        mix.scalar_weights.assign(np.asarray(weights, "float32"))
        mix.gamma.assign(gamma)


MIXES = [([0.5, -1.0, 0.25], 1.5), ([-0.7, 0.2, 0.9], 0.6)]


@pytest.mark.parametrize("do_layer_norm", [False, True])
@pytest.mark.parametrize("keep_sentence_boundaries", [False, True])
def test_two_representations_with_their_own_mixes(backbone, chars, do_layer_norm,
                                                  keep_sentence_boundaries):
    embedding = ElmoEmbedding(backbone, num_output_representations=2,
                              do_layer_norm=do_layer_norm,
                              keep_sentence_boundaries=keep_sentence_boundaries)
    embedding.build(chars.shape)
    set_mixes(embedding, MIXES)
    outputs = embedding(chars)
    expected, mask = allennlp_elmo(backbone, MIXES, do_layer_norm, keep_sentence_boundaries)
    assert len(outputs) == 2
    for got, want in zip(outputs, expected):
        assert_allclose(got, want, atol=1e-5)
    masks = embedding.compute_mask(chars)
    assert len(masks) == 2
    np.testing.assert_array_equal(to_numpy(masks[0]), mask)
    # Two mixes, four trainable variables; the biLM is frozen.
    assert len(embedding.trainable_weights) == 4


def test_mixes_train_independently(backbone, chars):
    inputs = keras.Input((None, 10), dtype="int32")
    first, second = ElmoEmbedding(backbone, num_output_representations=2, name="elmo")(inputs)
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling1D()(first))
    embedding = model.get_layer("elmo")
    model.compile(keras.optimizers.SGD(1.0), "mse")
    model.fit(chars, np.ones((3, 8), "float32"), epochs=1, verbose=0)
    trained, untouched = embedding.scalar_mixes
    assert not np.allclose(to_numpy(trained.scalar_weights), 0.0)
    np.testing.assert_array_equal(to_numpy(untouched.scalar_weights), np.zeros(3))
    assert float(to_numpy(untouched.gamma)) == 1.0


def test_dropout_only_in_training(backbone, chars):
    embedding = ElmoEmbedding(backbone, num_output_representations=2, dropout=0.5)
    embedding.build(chars.shape)
    set_mixes(embedding, MIXES)
    expected, mask = allennlp_elmo(backbone, MIXES)
    for got, want in zip(embedding(chars), expected):  # inference: no dropout
        assert_allclose(got, want, atol=1e-5)
    dropped = [to_numpy(x) for x in embedding(chars, training=True)]
    for got, want in zip(dropped, expected):
        kept = got != 0
        # Kept elements are scaled by 1 / (1 - 0.5); the rest are zeros.
        assert_allclose(got[kept], 2 * want[kept], atol=1e-5)
        real = np.broadcast_to(mask[..., None], got.shape) & (want != 0)
        assert 0.2 < 1 - kept[real].mean() < 0.8
    # Each representation has its own dropout mask.
    assert not np.array_equal(dropped[0] != 0, dropped[1] != 0)


def test_fixed_scalar_mix_parameters(backbone, chars):
    parameters = [1.0, -2.0, 0.5]
    embedding = ElmoEmbedding(backbone, scalar_mix_parameters=parameters)
    expected, _ = allennlp_elmo(backbone, [(parameters, 1.0)])
    assert_allclose(embedding(chars), expected[0], atol=1e-5)
    assert embedding.trainable_weights == []
    inputs = keras.Input((None, 10), dtype="int32")
    pooled = keras.layers.GlobalAveragePooling1D()(embedding(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(pooled))
    model.compile(keras.optimizers.SGD(1.0), "mse")
    model.fit(chars, np.ones((3, 1), "float32"), epochs=1, verbose=0)
    np.testing.assert_allclose(to_numpy(embedding.scalar_mix.scalar_weights), parameters)
    assert float(to_numpy(embedding.scalar_mix.gamma)) == 1.0


@pytest.mark.parametrize("requires_grad", [False, True])
def test_requires_grad_fine_tunes_the_bilm(chars, requires_grad):
    keras.utils.set_random_seed(2)
    backbone = ElmoBackbone(**TINY)
    inputs = keras.Input((None, 10), dtype="int32")
    embedding = ElmoEmbedding(backbone, requires_grad=requires_grad)
    pooled = keras.layers.GlobalAveragePooling1D()(embedding(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(pooled))
    assert backbone.trainable is requires_grad
    before = [to_numpy(w).copy() for w in backbone.weights]
    model.compile(keras.optimizers.SGD(0.5), "mse")
    model.fit(chars, np.ones((3, 1), "float32"), epochs=1, verbose=0)
    changed = [not np.array_equal(b, to_numpy(w)) for b, w in zip(before, backbone.weights)]
    if requires_grad:
        assert sum(changed) > len(changed) // 2  # CNN, highway, projection, LSTMs
        assert {w.path for w in embedding.trainable_weights} >= {
            w.path for w in backbone.weights}
    else:
        assert not any(changed)


@pytest.mark.parametrize("keep_sentence_boundaries", [False, True])
def test_vocab_to_cache_equals_the_character_path(backbone, chars, keep_sentence_boundaries):
    options = dict(num_output_representations=2, do_layer_norm=True,
                   keep_sentence_boundaries=keep_sentence_boundaries)
    by_characters = ElmoEmbedding(backbone, **options)
    by_words = ElmoEmbedding(backbone, vocab_to_cache=VOCABULARY, **options)
    by_characters.build(chars.shape)
    by_words.build(WORD_IDS.shape)
    set_mixes(by_characters, MIXES)
    set_mixes(by_words, MIXES)
    assert tuple(by_words.cached_embeddings.shape) == (len(VOCABULARY) + 2, 4)
    for got, want in zip(by_words(WORD_IDS), by_characters(chars)):
        assert_allclose(got, want, atol=1e-5)
    for got, want in zip(by_words.compute_mask(WORD_IDS), by_characters.compute_mask(chars)):
        np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
    layers, _ = by_words.layer_outputs(WORD_IDS)
    reference, _ = by_characters.layer_outputs(chars)
    for got, want in zip(layers, reference):
        assert_allclose(got, want, atol=1e-5)


OPTIONS = dict(num_output_representations=2, dropout=0.5, requires_grad=True,
               do_layer_norm=True, keep_sentence_boundaries=True,
               vocab_to_cache=VOCABULARY, initial_weights=[0.1, 0.2, 0.3],
               initial_gamma=0.5)


def test_options_survive_config_keras_file_and_preset(backbone, tmp_path):
    embedding = ElmoEmbedding(backbone, **OPTIONS)
    config = embedding.get_config()
    for key, value in OPTIONS.items():
        assert config[key] == value
    assert ElmoEmbedding.from_config(config).get_config() == config
    fixed = ElmoEmbedding(backbone, scalar_mix_parameters=[1.0, 0.0, -1.0])
    assert ElmoEmbedding.from_config(fixed.get_config()).scalar_mix_parameters == [
        1.0, 0.0, -1.0]

    inputs = keras.Input((None,), dtype="int32")
    first, second = ElmoEmbedding(backbone, name="elmo", **OPTIONS)(inputs)
    model = keras.Model(inputs, [first, second])
    model.get_layer("elmo").scalar_mixes[1].gamma.assign(2.0)
    path = str(tmp_path / "m.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    layer = restored.get_layer("elmo")
    for key, value in OPTIONS.items():
        assert getattr(layer, key) == value
    for got, want in zip(restored.predict(WORD_IDS, verbose=0),
                         model.predict(WORD_IDS, verbose=0)):
        assert_allclose(got, want, atol=1e-6)

    backbone.save_to_preset(str(tmp_path / "preset"))
    from_preset = ElmoEmbedding.from_preset(str(tmp_path / "preset"), **OPTIONS)
    direct = ElmoEmbedding(backbone, **OPTIONS)
    for got, want in zip(from_preset(WORD_IDS), direct(WORD_IDS)):
        assert_allclose(got, want, atol=1e-6)
    backbone.trainable = False  # shared by the module's other tests


def test_former_layer_norm_name_still_loads(backbone):
    config = ElmoEmbedding(backbone).get_config()
    del config["do_layer_norm"]
    config["layer_norm"] = True
    assert ElmoEmbedding.from_config(config).do_layer_norm is True
    backbone.trainable = False


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(num_output_representations=0), ValueError, "num_output_representations"),
    (dict(dropout=1.0), ValueError, "dropout"),
    (dict(requires_grad="yes"), TypeError, "requires_grad"),
    (dict(scalar_mix_parameters=[0.0, 1.0]), ValueError, "one weight per layer"),
    (dict(scalar_mix_parameters=[0.0] * 3, initial_weights=[0.0] * 3), ValueError,
     "not both"),
    (dict(vocab_to_cache="the bank"), TypeError, "list of str"),
    (dict(vocab_to_cache=["@@PADDING@@"]), ValueError, "at least one word"),
])
def test_bad_options_are_refused(backbone, kwargs, error, match):
    with pytest.raises(error, match=match):
        ElmoEmbedding(backbone, **kwargs)
    backbone.trainable = False
