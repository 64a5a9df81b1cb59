"""Export for serving: ``kzoo.export.saved_model(model, path)``, one way out
for every kzoo object that serves (each names its own signatures),
``kzoo.export.hugging_face(model, path)``, a transformers folder,
``kzoo.export.keras_hub(model, path)``, a keras-hub preset folder, and
``kzoo.export.onnx(task, path)``, ``model.onnx`` + ``tokenizer.json``."""

from kzoo.export.hugging_face import hugging_face  # noqa: F401
from kzoo.export.keras_hub import keras_hub  # noqa: F401
from kzoo.export.onnx import onnx, onnx_many  # noqa: F401
from kzoo.export.saved_model import saved_model, saved_models  # noqa: F401
