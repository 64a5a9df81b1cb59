"""Base class of every kzoo backbone."""

import contextlib
import gc
import warnings

import keras

from kzoo.api_export import kzoo_export
from kzoo.distribution import layout
from kzoo.models.model_lock import locked
from kzoo.presets import preset_loader, preset_saver


def check_positive_ints(owner, **values):
    """Raises a ValueError naming ``owner`` and the first non-positive-int size."""
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{owner}: `{name}` must be a positive int, got {value!r}.")


def check_heads(owner, hidden_dim, num_heads):
    """Raises a ValueError unless ``num_heads`` divides ``hidden_dim``."""
    if hidden_dim % num_heads:
        raise ValueError(
            f"{owner}: `hidden_dim`={hidden_dim} must be divisible by "
            f"`num_heads`={num_heads} (each head has hidden_dim // num_heads "
            "dimensions)."
        )


def quantize_model(model, keras_quantize, modes, mode, config, **kwargs):
    """``keras_quantize(mode, config=config)`` (Keras' ``Model.quantize``)
    after checking ``mode`` (or ``config.mode``) is one of ``modes``; Keras'
    warning for each layer without a ``quantize`` method is silenced."""
    if mode is None and config is not None:
        mode = config.mode
    if mode not in modes:
        raise ValueError(f"{type(model).__name__}.quantize supports the modes "
                         f"{modes}, got {mode!r}.")
    with warnings.catch_warnings():  # "Layer X does not have a quantize method"
        warnings.filterwarnings("ignore", message=".*does not have a `quantize`")
        with _one_garbage_collection():
            keras_quantize(mode, config=config, **kwargs)


@contextlib.contextmanager
def _one_garbage_collection():
    """One ``gc.collect()`` at the end instead of one per replaced kernel.

    Keras' ``Layer.__delattr__`` runs a full collection each time a layer
    drops a variable (so that the device frees the float kernel at once);
    ``quantize`` drops one per layer, and a full collection costs more the
    more objects the process holds. The float kernels are freed all the same,
    by the single collection that follows.
    """
    collect = gc.collect
    gc.collect = lambda *args, **kwargs: 0
    try:
        yield
    finally:
        gc.collect = collect
        gc.collect()


@kzoo_export("kzoo.models.Backbone")
class Backbone(keras.Model):
    """A network that maps token tensors to hidden states: no head, no loss.

    Subclasses build a functional model in ``__init__`` (layers first, then
    ``super().__init__(inputs=..., outputs=...)``), keep one attribute per
    constructor argument and extend ``get_config``. The base class gives them
    ``from_config`` (``cls(**config)``), ``from_preset`` and
    ``save_to_preset``.
    """

    def __init__(self, *args, dtype=None, **kwargs):
        super().__init__(*args, dtype=dtype, **kwargs)
        if isinstance(dtype, keras.dtype_policies.DTypePolicyMap):
            self._resolve_policy_map(dtype)
        elif dtype is not None:
            # keras' functional Model constructor drops `dtype`: record the
            # policy so that get_config and saved presets keep it.
            self.dtype_policy = dtype

    def _resolve_policy_map(self, policy_map):
        """A backbone built from a quantized config (a ``DTypePolicyMap``:
        each quantized layer's policy by path) gives each layer its own
        policy and keeps the float default as its own. Layers left holding
        the map misbehave in Keras 3.15: ``Embedding.save_own_variables``
        reads ``self.dtype_policy.quantization_mode``, which a map answers
        with None, and saved no scales (a reloaded int8 preset could not be
        saved again); and a head built in ``backbone.dtype_policy`` could
        not be quantized (``int8_from_map_float32``)."""
        for layer in self._flatten_layers(include_self=False):
            if isinstance(layer._dtype_policy, keras.dtype_policies.DTypePolicyMap):
                layer._dtype_policy = (policy_map[layer.path] if layer.path
                                       else policy_map.default_policy)
        self._dtype_policy = policy_map.default_policy

    # Concurrent callers take turns (see ``kzoo.models.model_lock``).
    fit = locked(keras.Model.fit)
    evaluate = locked(keras.Model.evaluate)
    predict = locked(keras.Model.predict)

    def __setattr__(self, name, value):
        # torch: a keras.Model is a torch.nn.Module, which refuses submodules
        # assigned before Module.__init__ ran. Subclasses create their layers
        # before calling super().__init__() (functional style), so fall back
        # to plain attributes until Keras has initialised the model.
        try:
            super().__setattr__(name, value)
        except (AttributeError, RuntimeError):
            object.__setattr__(self, name, value)

    def get_config(self):
        # Not keras.Model.get_config: that returns the layer graph. Each
        # subclass adds its own constructor arguments.
        config = {"name": self.name, "trainable": self.trainable}
        dtype = self._quantized_dtype_map() or self.dtype_policy
        if dtype.name != keras.config.dtype_policy().name:
            config["dtype"] = keras.dtype_policies.serialize(dtype)
        quantization_config = self._quantization_config()
        if quantization_config is not None:
            config["quantization_config"] = quantization_config
        if getattr(self, "lora_rank", None):
            config["lora_rank"] = self.lora_rank
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        lora_rank = config.pop("lora_rank", None)
        quantization_config = config.pop("quantization_config", None)
        backbone = cls(**config)
        if quantization_config is not None:
            backbone._apply_quantization_config(quantization_config)
        if lora_rank:
            backbone.enable_lora(lora_rank)
        return backbone

    # --- LoRA and quantization (keras' own layers do the work) ---
    #: layers ``enable_lora`` adapts: the attention projections (by name)
    lora_layer_names = ("query", "value", "query_dense", "value_dense",
                        "query_key_value_dense")
    #: ``quantize`` modes whose presets round-trip
    quantization_modes = ("int8",)

    def enable_lora(self, rank):
        """Freezes the backbone and adds trainable rank-``rank`` adapters
        (LoRA: ``W + A @ B``, ``B`` starting at zero) to its attention
        projections (``lora_layer_names``), keras-hub's habit.

        After this only the adapters train. ``save_to_preset`` writes the
        merged weights and the rank; ``from_preset`` re-adds the adapters.

        Args:
            rank: positive int.
        """
        check_positive_ints(f"{type(self).__name__}.enable_lora", rank=rank)
        if getattr(self, "lora_rank", None):
            raise ValueError(
                f"LoRA is already enabled on this {type(self).__name__} (rank "
                f"{self.lora_rank}); enable it once.")
        targets = [layer for layer in self._flatten_layers(include_self=False)
                   if layer.name in self.lora_layer_names
                   and hasattr(layer, "enable_lora")]
        if not targets:
            raise ValueError(
                f"{type(self).__name__} has no attention projection named "
                f"{'/'.join(self.lora_layer_names)} to put LoRA adapters on.")
        for layer in self._flatten_layers(include_self=False):
            layer.trainable = False
        for layer in targets:
            layer.trainable = True
            layer.enable_lora(rank)
            if getattr(layer, "bias", None) is not None:
                layer.bias.trainable = False  # only the adapters train
        self.lora_rank = rank

    def quantize(self, mode=None, config=None, **kwargs):
        """Keras' post-training quantization of the dense and embedding
        layers (``"int8"``: int8 weights, per-channel scales). The config
        records each quantized layer's policy (a ``DTypePolicyMap``) and a
        non-default ``config``, so ``save_to_preset`` / ``from_preset``
        round-trip the int8 weights and the way they run.

        Args:
            mode: ``"int8"`` (may be left out when ``config`` gives it).
            config: a ``keras.quantizers.Int8QuantizationConfig``, or None
                for Keras' default: int8 weights *and* int8 inputs to every
                dense layer (each row scaled by its absolute maximum). With
                ``Int8QuantizationConfig(activation_quantizer=None)`` only
                the weights are int8 (weight-only int8: the matmuls run in
                the compute dtype on the dequantized kernel), which keeps
                more of float32's accuracy.
        """
        quantize_model(self, super().quantize, self.quantization_modes, mode,
                       config, **kwargs)

    def _quantized_dtype_map(self):
        policy_map = keras.dtype_policies.DTypePolicyMap(
            default_policy=self.dtype_policy)
        for layer in self._flatten_layers(include_self=False):
            if getattr(layer, "quantization_mode", None) is not None:
                policy_map[layer.path] = layer.dtype_policy
        return policy_map if len(policy_map) else None

    def _quantization_config(self):
        """The serialized ``QuantizationConfig`` the quantized layers were
        made with, or None where it is Keras' default: one config when they
        share it, else ``{layer path: config}`` for the layers that have one."""
        configs = {
            layer.path: keras.saving.serialize_keras_object(layer.quantization_config)
            for layer in self._flatten_layers(include_self=False)
            if getattr(layer, "quantization_mode", None) is not None
            and getattr(layer, "quantization_config", None) is not None}
        if not configs:
            return None
        values = list(configs.values())
        if len(configs) == len(self._quantized_dtype_map() or ()) and all(
                value == values[0] for value in values):
            return values[0]
        return {"per_layer": configs}

    def _apply_quantization_config(self, serialized):
        """Gives the quantized layers of a backbone rebuilt from its config
        the ``QuantizationConfig`` they were saved with (the layers are built
        with Keras' default before it can be passed in): the config and the
        input quantizer it implies, the one thing it changes at call time."""
        per_layer = serialized.get("per_layer") if isinstance(serialized, dict) else None
        layers = [layer for layer in self._flatten_layers(include_self=False)
                  if getattr(layer, "quantization_mode", None) is not None]
        paths = {layer.path for layer in layers}
        unknown = sorted(set(per_layer or ()) - paths)
        if unknown:
            raise ValueError(
                f"The config's `quantization_config` names layers that this "
                f"{type(self).__name__} has not quantized: {unknown[:3]}. The "
                "config and its `dtype` policy map disagree: re-save the preset.")
        for layer in layers:
            value = per_layer.get(layer.path) if per_layer is not None else serialized
            if value is None:
                continue
            config = keras.saving.deserialize_keras_object(value)
            if not isinstance(config, keras.quantizers.QuantizationConfig):
                raise ValueError(
                    f"`quantization_config` must hold a serialized "
                    f"keras.quantizers.QuantizationConfig, got {value!r}.")
            if config.mode != layer.quantization_mode:
                raise ValueError(
                    f"Layer {layer.path} is quantized as "
                    f"{layer.quantization_mode!r} but its saved "
                    f"quantization_config is for {config.mode!r}: re-save the preset.")
            layer.quantization_config = config
            if hasattr(layer, "inputs_quantizer"):
                layer.inputs_quantizer = config.activation_quantizer

    @classmethod
    def from_preset(cls, preset, load_weights=True, **config_overrides):
        """Builds a backbone from a preset name, preset folder or checkpoint.

        Args:
            preset: str. A registered preset name (see ``kzoo.presets.list``),
                a local kzoo preset folder, a local folder in another
                library's format that a converter reads (a Hugging Face BERT
                folder, ...), or a remote handle (``hf://owner/name[@revision]``,
                ``kaggle://owner/model/framework/variation[/version]``) that
                its library fetches into, or reads from, its cache.
            load_weights: bool. Load the pretrained weights (False: random
                initialisation with the preset's architecture).
            **config_overrides: constructor arguments that replace the
                preset's (e.g. ``dropout=0.0``).
        """
        return preset_loader.load_backbone(
            preset, cls=cls, load_weights=load_weights, **config_overrides
        )

    @classmethod
    def layout_rules(cls):
        """The model-parallel sharding of this family's weights.

        Returns:
            A dict from a regex over variable paths (matched in full) to a
            tuple with ``"model"`` (split over the model-parallel axis) or
            ``None`` per axis of the matching variables. Variables no rule
            matches are replicated. The base class shards nothing.
        """
        return {}

    @classmethod
    def get_layout_map(cls, device_mesh, model_parallel_dim_name="model",
                       data_parallel_dim_name="batch"):
        """A ``keras.distribution.LayoutMap`` for model-parallel training.

        keras-hub's name and arguments: pass the map to
        ``keras.distribution.ModelParallel`` (or use
        ``kzoo.distribution.model_parallel``, which also checks the model
        against it), then build and fit the model inside the distribution's
        scope. The large weights are split over ``model_parallel_dim_name``
        as ``layout_rules`` says; biases and norms stay replicated.

        Args:
            device_mesh: a ``keras.distribution.DeviceMesh`` that has both
                named axes.
            model_parallel_dim_name: str. Mesh axis to split weights over.
            data_parallel_dim_name: str. Mesh axis the batch is split over.

        Example:
        >>> mesh = keras.distribution.DeviceMesh(
        ...     shape=(1, 2), axis_names=("batch", "model"),
        ...     devices=["cpu:0", "cpu:1"])
        >>> layout_map = kzoo.models.BertBackbone.get_layout_map(mesh)
        >>> layout_map["transformer_layer_0/feedforward_output_dense/kernel"].axes
        ('model', None)
        """
        return layout.layout_map(
            device_mesh, cls.layout_rules(),
            model_parallel_dim_name=model_parallel_dim_name,
            data_parallel_dim_name=data_parallel_dim_name,
        )

    def save_to_preset(self, preset_dir):
        """Writes ``config.json``, ``model.weights.h5`` and ``metadata.json``
        to ``preset_dir`` atomically (a temporary folder renamed into place).
        """
        preset_saver.save_preset(preset_dir, backbone=self)
