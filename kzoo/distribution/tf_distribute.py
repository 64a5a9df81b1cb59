"""``tf.distribute`` strategies for Keras models on the TensorFlow backend.

Build, compile and fit the model inside ``strategy.scope()``; Keras splits
each global batch over the replicas and sums their gradients.
"""

import keras


class TPUNotFoundError(RuntimeError):
    """No TPU could be reached (this machine has none, or the name is wrong)."""


def _require_tensorflow(what):
    if keras.config.backend() != "tensorflow":
        raise RuntimeError(
            f"{what} gives a tf.distribute strategy, which only Keras' "
            f"TensorFlow backend trains under; the backend is "
            f"{keras.config.backend()}. Set KERAS_BACKEND=tensorflow, or use "
            "kzoo.distribution.data_parallel() / model_parallel() on JAX "
            "(also on TPUs) or kzoo.distribution.torch_ddp on PyTorch."
        )


def mirrored_strategy(devices=None, logical_cpus=None):
    """A ``tf.distribute.MirroredStrategy`` over several GPUs or CPUs.

    Args:
        devices: list of TensorFlow device names (``"/gpu:0"``, ...), or None
            for every GPU (or the CPU when there is none).
        logical_cpus: int or None. Split the CPU into this many logical
            devices first and mirror over them: how to test multi-device
            code on a machine without accelerators. Must be called before
            TensorFlow has initialised its devices.

    Returns:
        The strategy. Build and fit inside ``strategy.scope()``.
    """
    _require_tensorflow("kzoo.distribution.mirrored_strategy()")
    import tensorflow as tf

    if logical_cpus is not None:
        if not isinstance(logical_cpus, int) or logical_cpus < 1:
            raise ValueError(
                f"`logical_cpus` must be a positive int, got {logical_cpus!r}."
            )
        cpu = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus
            )
        except RuntimeError as error:
            existing = len(tf.config.list_logical_devices("CPU"))
            if existing != logical_cpus:
                raise RuntimeError(
                    f"TensorFlow's devices are already initialised ({existing} "
                    f"logical CPU(s)), so they cannot be split into "
                    f"{logical_cpus}: call mirrored_strategy(logical_cpus="
                    f"{logical_cpus}) before anything runs on TensorFlow."
                ) from error
        if devices is None:
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices=devices)


# What TensorFlow 2.21 says without a TPU (besides IndexError / OpError).
_NO_TPU_MESSAGES = ("Please provide a TPU Name", "TPUs not found in the cluster")


def tpu_strategy(tpu="local"):
    """Connects to a TPU and returns a ``tf.distribute.TPUStrategy``.

    Runs the standard sequence: ``TPUClusterResolver(tpu)`` →
    ``tf.config.experimental_connect_to_cluster`` →
    ``tf.tpu.experimental.initialize_tpu_system`` → ``TPUStrategy``.

    Args:
        tpu: ``"local"`` on a Cloud TPU VM, or the TPU's name or
            ``grpc://`` address for a TPU node.

    Returns:
        The strategy. Build, compile and fit inside ``strategy.scope()``.

    Raises:
        TPUNotFoundError: no TPU answered (TensorFlow's own errors here read
            "Please provide a TPU Name to connect to" or an IndexError).
    """
    _require_tensorflow("kzoo.distribution.tpu_strategy()")
    import tensorflow as tf

    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    except (ValueError, IndexError, RuntimeError, KeyError, OSError,
            tf.errors.OpError) as error:
        text = f"{type(error).__name__}: {error}"
        # OSError: a TPU name is looked up on the GCE metadata server.
        if isinstance(error, (IndexError, KeyError, OSError, tf.errors.OpError)) or any(
            message in text for message in _NO_TPU_MESSAGES
        ):
            raise TPUNotFoundError(
                f"No TPU found for tpu={tpu!r}: this machine has no TPU, or "
                "the name or address is wrong. Run on a Cloud TPU VM with "
                "tpu='local', or pass the TPU node's name; on GPUs or CPUs use "
                "kzoo.distribution.mirrored_strategy(), or data_parallel() / "
                "model_parallel() with KERAS_BACKEND=jax (JAX also drives "
                f"TPUs). TensorFlow said: {text.splitlines()[0]}"
            ) from error
        raise
