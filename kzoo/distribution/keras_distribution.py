"""``keras.distribution`` objects for the devices found, checked up front.

Keras' distribution API shards what is built and run inside its scope: build
the model (``from_preset`` included) **and** call ``fit`` inside
``distribution.scope()``, or call ``keras.distribution.set_distribution``
first. It runs on JAX (and data parallelism on TensorFlow); Keras 3.15 has
no ``keras.distribution`` for PyTorch, where ``kzoo.distribution.torch_ddp``
is the path.
"""

import os

import keras
import numpy as np

from kzoo.distribution import layout

_ENVIRONMENT = (
    "KERAS_DISTRIBUTION_JOB_ADDRESSES",
    "KERAS_DISTRIBUTION_NUM_PROCESSES",
    "KERAS_DISTRIBUTION_PROCESS_ID",
)


def _require_keras_distribution(what):
    backend = keras.config.backend()
    if backend not in ("jax", "tensorflow"):
        raise RuntimeError(
            f"{what} needs keras.distribution, which Keras "
            f"{keras.__version__} does not provide on the {backend} backend. "
            "On PyTorch use kzoo.distribution.torch_ddp (DistributedDataParallel "
            "launched with torchrun), or set KERAS_BACKEND=jax."
        )


def devices(device_type=None):
    """The devices Keras sees (all processes' in a multi-process run).

    Args:
        device_type: None (accelerators if any, else CPUs), ``"cpu"``,
            ``"gpu"`` or ``"tpu"``.
    """
    _require_keras_distribution("kzoo.distribution.devices()")
    return keras.distribution.list_devices(device_type)


class _CheckedDataParallel(keras.distribution.DataParallel):
    """DataParallel whose batches are checked before they are split."""

    def get_data_layout(self, data_shape):
        _check_batch(data_shape[0], self.num_model_replicas)
        return super().get_data_layout(data_shape)


class _CheckedModelParallel(keras.distribution.ModelParallel):
    """ModelParallel that checks each variable against its layout when the
    variable is created, and each batch before it is split."""

    def get_data_layout(self, data_shape):
        _check_batch(data_shape[0], self.num_model_replicas)
        return super().get_data_layout(data_shape)

    def get_variable_layout(self, variable):
        if getattr(variable, "_layout", None) is None:
            layout.check_variable(self._layout_map, variable)
        return super().get_variable_layout(variable)


def _check_batch(batch_size, replicas):
    if batch_size is not None and int(batch_size) % replicas:
        raise ValueError(
            f"The batch of {int(batch_size)} examples cannot be split evenly "
            f"over {replicas} data-parallel replicas. Use a global batch size "
            f"that is a multiple of {replicas} (and drop or pad the last "
            "partial batch: tf.data's `batch(..., drop_remainder=True)`)."
        )


def _device_list(device_list, device_type):
    found = list(device_list) if device_list is not None else devices(device_type)
    if not found:
        raise ValueError("No devices found to distribute over.")
    return found


def data_parallel(batch_size=None, devices=None, device_type=None):
    """A ``keras.distribution.DataParallel`` over every device found.

    Each device holds a full copy of the weights and a slice of every
    batch; gradients are averaged across devices, so training equals one
    device on the same global batch.

    Args:
        batch_size: int or None. The global batch size you will train with:
            checked now to divide evenly over the devices. Every batch is
            checked again before it is split.
        devices: list of device names, or None for all of them.
        device_type: ``"cpu"``, ``"gpu"``, ``"tpu"`` or None.

    Returns:
        The distribution. Build and fit the model inside its ``scope()``.

    Example (8 devices, e.g. ``XLA_FLAGS=--xla_force_host_platform_device_count=8``
    with ``KERAS_BACKEND=jax``)::

        distribution = kzoo.distribution.data_parallel(batch_size=32)
        with distribution.scope():
            model = kzoo.BertClassifier.from_preset("minilm_l6_en_uncased",
                                                    num_classes=2)
            model.fit(texts, labels, batch_size=32)
    """
    _require_keras_distribution("kzoo.distribution.data_parallel()")
    found = _device_list(devices, device_type)
    _check_batch(batch_size, len(found))
    return _CheckedDataParallel(devices=found)


def _backbone_of(model):
    if isinstance(model, type):
        return model
    return getattr(model, "backbone", None) or model


def model_parallel(model, shape, batch_size=None, layout_map=None,
                   devices=None, device_type=None):
    """A ``keras.distribution.ModelParallel`` on a (batch, model) device mesh.

    The weights are split over the mesh's ``"model"`` axis by the
    backbone's ``get_layout_map`` (or ``layout_map``); batches are split
    over its ``"batch"`` axis.

    Args:
        model: a Backbone class (``kzoo.models.BertBackbone``), or a
            backbone or task instance. An instance is checked now, before
            anything is placed: every variable takes its layout (the
            model-parallel size divides each split axis) and, for a given
            ``layout_map``, every rule matches a variable. It is not moved:
            build the model to train inside the returned distribution's
            ``scope()``. With a class, each variable is checked as it is
            created inside the scope.
        shape: ``(batch, model)``: data-parallel replicas times devices per
            replica; their product is the number of devices.
        batch_size: int or None. The global batch size, checked now to
            divide over the ``batch`` axis.
        layout_map: a ``keras.distribution.LayoutMap`` over a mesh with axes
            ``("batch", "model")`` to use instead of the backbone's.
        devices: list of device names, or None for all of them.
        device_type: ``"cpu"``, ``"gpu"``, ``"tpu"`` or None.

    Returns:
        The distribution.

    Example (8 devices)::

        distribution = kzoo.distribution.model_parallel(
            kzoo.models.GPTBackbone, shape=(2, 4))
        with distribution.scope():
            model = kzoo.GPTCausalLM.from_preset("path/to/gpt2")
            model.fit(texts, batch_size=8)
    """
    _require_keras_distribution("kzoo.distribution.model_parallel()")
    found = _device_list(devices, device_type)
    shape = tuple(shape)
    if len(shape) != 2 or not all(isinstance(s, int) and s > 0 for s in shape):
        raise ValueError(
            f"`shape` must be (batch, model), two positive ints, got {shape!r}."
        )
    if shape[0] * shape[1] != len(found):
        raise ValueError(
            f"A mesh of shape {shape} needs {shape[0] * shape[1]} devices, but "
            f"{len(found)} were found. Choose (batch, model) with batch * model "
            f"== {len(found)}."
        )
    _check_batch(batch_size, shape[0])
    backbone = _backbone_of(model)
    mesh = keras.distribution.DeviceMesh(
        shape=shape, axis_names=("batch", "model"),
        devices=np.asarray(found, dtype=object).reshape(shape),
    )
    given = layout_map is not None
    if not given:
        if not hasattr(backbone, "get_layout_map"):
            raise ValueError(
                f"{type(model).__name__} has no get_layout_map(); pass a "
                "kzoo Backbone (class or instance), a task or `layout_map=`."
            )
        layout_map = backbone.get_layout_map(mesh)
    elif tuple(layout_map.device_mesh.shape) != shape:
        raise ValueError(
            f"`layout_map` is over a mesh of shape "
            f"{tuple(layout_map.device_mesh.shape)}, not {shape}."
        )
    if not isinstance(model, type):
        layout.check_layouts(layout_map, model.weights, require_every_rule=given)
    return _CheckedModelParallel(layout_map=layout_map, batch_dim_name="batch")


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               cpu_collectives="gloo"):
    """Joins this process to a multi-process (multi-host) JAX run.

    Call it first thing in every process, before any computation; then
    ``data_parallel()`` / ``model_parallel()`` see every process's devices.
    Wraps ``keras.distribution.initialize``: each argument left None comes
    from ``KERAS_DISTRIBUTION_JOB_ADDRESSES`` (the coordinator, process 0's
    ``host:port``), ``KERAS_DISTRIBUTION_NUM_PROCESSES`` and
    ``KERAS_DISTRIBUTION_PROCESS_ID``; when all are absent, JAX finds them
    itself where it can (Cloud TPU VMs, SLURM, Open MPI).

    Args:
        coordinator_address: str, ``"host:port"`` of process 0.
        num_processes: int. Processes in the run.
        process_id: int. This process's index, ``0 .. num_processes - 1``.
        cpu_collectives: str or None. Collective implementation for CPU
            devices (``"gloo"`` lets CPU processes talk over TCP, e.g.
            127.0.0.1); None leaves JAX's default.
    """
    if keras.config.backend() != "jax":
        raise RuntimeError(
            "kzoo.distribution.initialize() starts a JAX multi-process run; "
            f"the backend is {keras.config.backend()}. Set KERAS_BACKEND=jax, "
            "or on PyTorch launch with torchrun (kzoo.distribution.torch_ddp); "
            "on TensorFlow use tf.distribute's MultiWorkerMirroredStrategy."
        )
    import jax

    values = dict(zip(_ENVIRONMENT, (coordinator_address, num_processes, process_id)))
    for name in _ENVIRONMENT:
        if values[name] is None and os.environ.get(name):
            values[name] = os.environ[name]
    address, count, index = (values[name] for name in _ENVIRONMENT)
    count = None if count is None else int(count)
    index = None if index is None else int(index)
    given = [v is not None for v in (address, count, index)]
    if any(given) and not all(given):
        raise ValueError(
            "Give all of coordinator_address, num_processes and process_id "
            "(or the KERAS_DISTRIBUTION_* variables), or none; got "
            f"coordinator_address={address!r}, num_processes={count!r}, "
            f"process_id={index!r}."
        )
    if count is not None and not 0 <= index < count:
        raise ValueError(
            f"process_id={index} is outside 0 .. num_processes - 1 = {count - 1}."
        )
    if cpu_collectives:
        jax.config.update("jax_cpu_collectives_implementation", cpu_collectives)
    keras.distribution.initialize(address, count, index)
