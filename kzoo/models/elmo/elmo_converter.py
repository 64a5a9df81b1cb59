"""Reads AllenNLP / bilm-tf ELMo folders (options.json + weights hdf5).

The released ELMo models (and AllenNLP's test fixture) come as two files:
an options JSON (``lstm`` and ``char_cnn`` sections) and an hdf5 file of
bilm-tf's variables (``char_embed``, ``CNN/W_cnn_i``, ``CNN_high_k``,
``CNN_proj``, ``RNN_{0,1}/RNN/MultiRNNCell/Cell{i}/LSTMCell/{W_0,B,W_P_0}``).
A folder holding one of each loads with ``ElmoBackbone.from_preset(folder)``.

What the conversion does (as AllenNLP's ``_ElmoCharacterEncoder`` and
``ElmoLstm.load_weights``):

* ``char_embed`` has no row for id 0 (padding): a zero row is put first, so
  the table matches ``CharacterIds``' ids, which are shifted by one.
* the convolution kernels ``[1, width, dim, number]`` lose their first axis.
* highway layers: bilm-tf's ``W_carry``/``b_carry`` is the gate ``t`` of
  ``t * relu(x W_transform + b) + (1 - t) * x``: it goes to ``gate_dense``
  unchanged (AllenNLP negates it because its layer computes the mirror form).
* LSTMs: ``W_0`` stacks the input and recurrent kernels (``[input_dim +
  projection_dim, 4 * cells]``) with TensorFlow's gate order input,
  candidate, forget, output; kzoo (like Keras and AllenNLP) uses input,
  forget, candidate, output, so the middle two blocks swap. TensorFlow adds
  ``forget_bias=1.0`` at run time; here the 1.0 is added to the stored bias.
  ``RNN_0`` is the forward direction, ``RNN_1`` the backward one.
"""

import warnings
from pathlib import Path

import h5py
import numpy as np

from kzoo.presets.errors import PresetError
from kzoo.presets.preset_source import PresetSource, read_json

OPTIONS_FILE = "options.json"


def _options_file(path):
    path = Path(path)
    if (path / OPTIONS_FILE).is_file():
        return path / OPTIONS_FILE
    found = sorted(path.glob("*options*.json"))
    if len(found) == 1:
        return found[0]
    return None


def _read_options(path):
    file = _options_file(path)
    if file is None:
        raise PresetError(f"{path} has no ELMo options file (options.json).")
    options = read_json(file)
    if (not isinstance(options, dict)
            or not all(isinstance(options.get(k), dict) for k in ("lstm", "char_cnn"))):
        raise PresetError(
            f"{file} is not an ELMo options file: it needs 'lstm' and "
            "'char_cnn' sections (JSON objects)."
        )
    return file, options


def _is_elmo_weights(file):
    """True or False, or None where ``file`` does not open as HDF5."""
    try:
        with h5py.File(file, "r") as f:
            return "char_embed" in f and "RNN_0" in f
    except OSError:
        return None


def weights_file(path):
    """The one hdf5 file of ``path`` that holds ELMo weights, or an error."""
    path = Path(path)
    candidates = sorted(path.glob("*.hdf5")) + sorted(path.glob("*.h5"))
    kinds = {f: _is_elmo_weights(f) for f in candidates}
    found = [f for f in candidates if kinds[f]]
    if len(found) == 1:
        return found[0]
    if not found:
        damaged = [f.name for f in candidates if kinds[f] is None]
        raise PresetError(
            f"{path} holds no ELMo weights file (an hdf5 file with 'char_embed' "
            f"and 'RNN_0'); hdf5 files there: "
            f"{', '.join(f.name for f in candidates) or 'none'}"
            + (f" ({', '.join(damaged)}: not readable as HDF5, damaged or "
               "truncated)" if damaged else "")
            + ". Put the weights file released with the options file in the "
            "folder (download it again if it is damaged)."
        )
    raise PresetError(
        f"{path} holds several ELMo weights files ({', '.join(f.name for f in found)}): "
        "keep one per folder."
    )


#: ElmoBackbone arguments → where the options file keeps them (for errors)
OPTION_FIELDS = {
    "num_layers": "lstm.n_layers",
    "hidden_dim": "lstm.dim",
    "projection_dim": "lstm.projection_dim",
    "filters": "char_cnn.filters",
    "num_highway_layers": "char_cnn.n_highway",
    "character_dim": "char_cnn.embedding.dim",
    "max_word_length": "char_cnn.max_characters_per_token",
}


def _option(options, file, section, key, default=None):
    value = options[section].get(key, default)
    if value is None:
        raise PresetError(f"{file} lacks {section}.{key}.")
    return value


def _clip(options, file, key):
    value = options["lstm"].get(key)
    if not value:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PresetError(f"`lstm.{key}` in {file} must be a number, got {value!r:.100}.")
    return float(value)


def backbone_config_from_options(options, file="options.json"):
    """ElmoBackbone arguments for an ELMo options dict.

    The sizes are passed as the file writes them (the preset loader's size
    check refuses what is not a positive int, or ``filters`` that are not
    ``[width, count]`` pairs, naming the option as ``OPTION_FIELDS`` spells
    it).
    """
    lstm, cnn = options["lstm"], options["char_cnn"]
    activation = cnn.get("activation", "relu")
    if activation not in ("relu", "tanh"):
        raise PresetError(
            f"{file} has char_cnn.activation={activation!r:.100}; ELMo uses 'relu' or 'tanh'."
        )
    embedding = _option(options, file, "char_cnn", "embedding")
    if not isinstance(embedding, dict) or "dim" not in embedding:
        raise PresetError(
            f"`char_cnn.embedding` in {file} must be an object with a `dim`, got "
            f"{embedding!r:.100}.")
    return {
        "num_layers": _option(options, file, "lstm", "n_layers"),
        "hidden_dim": _option(options, file, "lstm", "dim"),
        "projection_dim": _option(options, file, "lstm", "projection_dim"),
        "filters": _option(options, file, "char_cnn", "filters"),
        "num_highway_layers": cnn.get("n_highway", 0),
        "character_dim": embedding["dim"],
        # CharacterIds' ids: 261 characters shifted by one, 0 for padding.
        "num_characters": 262,
        "max_word_length": cnn.get("max_characters_per_token", 50),
        "activation": activation,
        "cell_clip": _clip(options, file, "cell_clip"),
        "projection_clip": _clip(options, file, "proj_clip"),
        "use_skip_connections": bool(lstm.get("use_skip_connections", False)),
        "dropout": 0.0,
    }


def _lstm_transform(kind, input_dim, units):
    """Functions from a stored LSTM tensor to kzoo's layout."""

    def reorder(a):  # TF gates i, j, f, o -> i, f, j, o along the last axis
        i, j, f, o = np.split(a, 4, axis=-1)
        return np.concatenate([i, f, j, o], axis=-1)

    if kind == "kernel":
        return lambda a: reorder(a[:input_dim])
    if kind == "recurrent_kernel":
        return lambda a: reorder(a[input_dim:])

    def bias(a):
        a = reorder(a).copy()
        a[units:2 * units] += 1.0  # TensorFlow's forget_bias
        return a

    return bias


def _weight_map(backbone):
    """``[(dataset, variable, expected stored shape, transform)]``."""
    needed = ("character_cnn", "highway_layers", "token_projection",
              "forward_lstm_layers", "backward_lstm_layers")
    if any(not hasattr(backbone, n) for n in needed):
        raise PresetError(
            f"An ELMo weights file loads into an ElmoBackbone, not a "
            f"{type(backbone).__name__}."
        )
    same = lambda a: a  # noqa: E731
    cnn = backbone.character_cnn
    table = cnn.character_embedding.embeddings
    entries = [(
        "char_embed", table, (table.shape[0] - 1, table.shape[1]),
        lambda a: np.concatenate([np.zeros((1, a.shape[1]), a.dtype), a]),
    )]
    for i, conv in enumerate(cnn.convolutions):
        entries.append((f"CNN/W_cnn_{i}", conv.kernel, (1,) + tuple(conv.kernel.shape),
                        lambda a: a[0]))
        entries.append((f"CNN/b_cnn_{i}", conv.bias, tuple(conv.bias.shape), same))
    for k, highway in enumerate(backbone.highway_layers):
        for stored, dense in (("transform", highway.transform_dense),
                              ("carry", highway.gate_dense)):
            entries.append((f"CNN_high_{k}/W_{stored}", dense.kernel,
                            tuple(dense.kernel.shape), same))
            entries.append((f"CNN_high_{k}/b_{stored}", dense.bias,
                            tuple(dense.bias.shape), same))
    projection = backbone.token_projection
    entries.append(("CNN_proj/W_proj", projection.kernel, tuple(projection.kernel.shape), same))
    entries.append(("CNN_proj/b_proj", projection.bias, tuple(projection.bias.shape), same))
    for direction, layers in enumerate((backbone.forward_lstm_layers,
                                        backbone.backward_lstm_layers)):
        for i, layer in enumerate(layers):
            cell = layer.cell
            prefix = f"RNN_{direction}/RNN/MultiRNNCell/Cell{i}/LSTMCell/"
            input_dim, units = cell.kernel.shape[0], cell.units
            stacked = (input_dim + cell.projection_dim, 4 * units)
            for kind in ("kernel", "recurrent_kernel"):
                entries.append((prefix + "W_0", getattr(cell, kind), stacked,
                                _lstm_transform(kind, input_dim, units)))
            entries.append((prefix + "B", cell.bias, (4 * units,),
                            _lstm_transform("bias", input_dim, units)))
            entries.append((prefix + "W_P_0", cell.projection_kernel,
                            tuple(cell.projection_kernel.shape), same))
    return entries


class AllenNlpElmoSource(PresetSource):
    """A folder with an ELMo options JSON and a bilm-tf weights hdf5 file.

    ``matches`` accepts a folder with ``options.json`` (or one
    ``*options*.json``) holding ``lstm`` and ``char_cnn`` sections; the
    weights file (the one hdf5 file there holding ``char_embed`` and
    ``RNN_0``) is looked for only when weights are loaded.
    """

    format_name = "AllenNLP ELMo"

    @classmethod
    def matches(cls, path):
        if _options_file(path) is None:
            return False
        try:
            _read_options(path)
        except PresetError:
            return False
        return True

    def backbone_config(self):
        file, options = _read_options(self.path)
        return {
            "module": "kzoo.models.elmo.elmo_backbone",
            "class_name": "ElmoBackbone",
            "registered_name": "kzoo>ElmoBackbone",
            "config": backbone_config_from_options(options, file),
        }

    def config_field_names(self):
        return _options_file(self.path) or self.path, dict(OPTION_FIELDS)

    def load_backbone_weights(self, backbone):
        """Copies the hdf5 weights into ``backbone``, all or nothing.

        Every dataset is found and its shape and dtype checked against the
        backbone built from the options before any variable is assigned (no
        dataset is read after the first one that does not fit); a missing
        dataset, a shape that does not fit, values that are not floats or a
        file HDF5 cannot read raise a PresetError naming the file, the
        datasets and both shapes, and the backbone keeps its weights.
        """
        file = weights_file(self.path)
        entries = _weight_map(backbone)
        problems, plan = [], []
        try:
            with h5py.File(file, "r") as f:
                for name, variable, expected, transform in entries:
                    stored = f.get(name)
                    if not isinstance(stored, h5py.Dataset):
                        problems.append(f"dataset {name} is missing")
                        continue
                    if tuple(stored.shape) != expected:
                        problems.append(
                            f"dataset {name} has shape {tuple(stored.shape)} but "
                            f"the options ask for {expected}"
                        )
                    elif stored.dtype.kind != "f":
                        problems.append(
                            f"dataset {name} holds {stored.dtype} values, not "
                            "floats"
                        )
                    if problems:
                        continue  # nothing more is read once one does not fit
                    plan.append((variable, transform(
                        np.asarray(stored[...], dtype="float32"))))
                used = {name for name, _, _, _ in entries}
                stored_names = []
                f.visititems(lambda n, o: stored_names.append(n)
                             if isinstance(o, h5py.Dataset) else None)
        except OSError as exc:
            raise PresetError(
                f"Could not read {file} ({exc}): it is damaged or truncated. "
                "Download the weights file again. Nothing was loaded."
            ) from exc
        if problems:
            raise PresetError(
                f"The weights in {file} do not fit the options in "
                f"{_options_file(self.path)}: " + "; ".join(problems) + ". Use "
                "the options file released with these weights (and download "
                "the weights again if they are damaged). Nothing was loaded."
            )
        for variable, value in plan:
            variable.assign(value)
        unused = sorted(set(stored_names) - used)
        if unused:
            warnings.warn(
                f"{file} holds datasets the ElmoBackbone does not use: "
                f"{', '.join(unused[:8])}{' ...' if len(unused) > 8 else ''}.",
                stacklevel=2,
            )

    def load_tokenizer(self, cls=None, **kwargs):
        raise PresetError(
            f"{self.path} is an AllenNLP ELMo folder: it has characters only, no "
            "word vocabulary. ElmoBackbone, ElmoEmbedder and ElmoEmbedding need "
            "none; a language model needs a word tokenizer built from a corpus "
            "(kzoo.tokenizers.compute_word_vocabulary)."
        )
