"""Many devices: thin helpers over the engines that exist.

Keras' distribution API (``data_parallel``, ``model_parallel``,
``initialize``; each backbone's ``get_layout_map``) on JAX,
``tf.distribute`` (``mirrored_strategy``, ``tpu_strategy``) on TensorFlow,
and ``torch.distributed`` (``kzoo.distribution.torch_ddp``) on PyTorch.
kzoo implements no parallelism of its own.
"""

from kzoo.distribution import torch_ddp
from kzoo.distribution.keras_distribution import (
    data_parallel,
    devices,
    initialize,
    model_parallel,
)
from kzoo.distribution.layout import check_layouts, layout_map
from kzoo.distribution.tf_distribute import (
    TPUNotFoundError,
    mirrored_strategy,
    tpu_strategy,
)
