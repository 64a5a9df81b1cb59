"""TF Serving's side of a SavedModel: method names and warmup requests.

TF Serving answers its Classify API only from a signature whose
``method_name`` is ``tensorflow/serving/classify`` (input ``inputs``:
serialized ``tf.Example`` protos; outputs ``classes`` and ``scores``); an
object names such signatures with ``serving_method_names()`` and
``set_method_names`` writes them into ``saved_model.pb`` (TensorFlow 2's
``tf.saved_model.save`` writes every signature as a predict signature).

At load, the model server replays ``assets.extra/tf_serving_warmup_requests``
(a TFRecord file of ``tensorflow_serving.apis.PredictionLog`` protos), so
that the first user request does not pay for the graph's first run.
``write_warmup_requests`` writes one ``PredictLog`` per request of a
predict signature and one ``ClassifyLog`` per request of a classify
signature, after running each through the signature it names, so that
the file holds no request the model fails on.
"""

import logging
import os

logger = logging.getLogger(__name__)

#: where TF Serving looks for warmup requests, inside a SavedModel folder
WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
#: the texts of the default warmup requests: empty, one word, a long text
WARMUP_TEXTS = ("", "hello", " ".join(
    ["A longer text, with punctuation and numbers (1, 22, 333), that runs "
     "past the sequence length of most exported models."] * 8))
#: the sequence length of a numeric warmup input whose length is not fixed
_NUMERIC_LENGTH = 8


def classify_endpoint(serve, input_names, class_names):
    """TF Serving's Classify API over a raw-string predict function:
    ``(classify, input_signature)``. ``classify`` takes ``inputs``,
    serialized ``tf.Example`` protos with one bytes feature per name of
    ``input_names``, calls ``serve`` on them and returns ``classes``
    (``[batch, num_classes]`` strings, ``class_names``) and ``scores``
    (``serve``'s ``probabilities``)."""
    from kzoo.preprocessing.engine import tf

    names, class_names = list(input_names), list(class_names)

    def classify(serialized):
        features = tf.io.parse_example(
            serialized, {n: tf.io.FixedLenFeature([], tf.string) for n in names})
        scores = serve(*[features[n] for n in names])["probabilities"]
        classes = tf.tile(tf.constant([class_names]), [tf.shape(scores)[0], 1])
        return {"classes": classes, "scores": scores}

    return classify, [tf.TensorSpec([None], tf.string, name="inputs")]


def classify_warmup_requests(input_names):
    """Warmup requests of a classify signature: serialized ``tf.Example``
    protos of an empty, a one-word and a long text (``WARMUP_TEXTS``), each
    text in every feature of ``input_names``."""
    from kzoo.preprocessing.engine import tf

    def example(text):
        feature = {n: tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[text.encode("utf-8")])) for n in input_names}
        return tf.train.Example(
            features=tf.train.Features(feature=feature)).SerializeToString()

    return [{"inputs": [example(text)]} for text in WARMUP_TEXTS]


def default_warmup_inputs(specs):
    """Representative inputs of a signature, or None when there are none to
    guess.

    A signature whose inputs are all string batches (``[None]``) gets one
    request per ``WARMUP_TEXTS`` item (each input that text, batch 1); one
    whose inputs are all numeric ``[None, length]`` gets one request of
    ones ``[1, length]``. Others (a ragged token input beside its lengths)
    need the object's ``serving_warmup_inputs()``.

    Args:
        specs: the signature's ``tf.TensorSpec`` list.

    Returns:
        A list of ``{input name: nested list}``, or None.
    """
    import tensorflow as tf

    if all(s.dtype == tf.string and s.shape.rank == 1 for s in specs):
        return [{s.name: [text] for s in specs} for text in WARMUP_TEXTS]
    if all(s.dtype.is_integer and s.shape.rank == 2 for s in specs):
        return [{s.name: [[1] * (s.shape[1] or _NUMERIC_LENGTH)] for s in specs}]
    return None


def set_method_names(path, methods):
    """Sets the ``method_name`` of signatures in the SavedModel at ``path``.

    Args:
        path: a SavedModel folder.
        methods: ``{signature name: method name}``.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    file = os.path.join(path, "saved_model.pb")
    saved = saved_model_pb2.SavedModel()
    with open(file, "rb") as f:
        saved.ParseFromString(f.read())
    for meta_graph in saved.meta_graphs:
        for name, method in methods.items():
            if name not in meta_graph.signature_def:
                raise ValueError(f"`serving_method_names` names the signature {name!r}, "
                                 f"which the SavedModel does not have.")
            meta_graph.signature_def[name].method_name = method
    with open(file, "wb") as f:
        f.write(saved.SerializeToString())


def input_specs(function):
    """The named ``tf.TensorSpec`` inputs of a concrete function, in order
    (positional as traced, or by keyword as loaded)."""
    args, kwargs = function.structured_input_signature
    return list(args) + [kwargs[k] for k in sorted(kwargs)]


def _reason(error):
    """The line of a TensorFlow error that says what went wrong (its message
    also holds the traceback of the graph's node)."""
    lines = [line.strip() for line in error.message.splitlines()
             if line.strip() and not line.strip().startswith("[[")]
    return (lines[-1] if lines else type(error).__name__)[:300]


def _shorten(inputs):
    text = repr(inputs)
    return text if len(text) <= 80 else text[:77] + "..."


def _tensor(value, spec):
    import tensorflow as tf

    return tf.constant(value, dtype=spec.dtype)


def write_warmup_requests(path, signatures, requests, methods=None, defaults=()):
    """Writes ``assets.extra/tf_serving_warmup_requests`` in the SavedModel
    folder ``path``.

    Args:
        path: the SavedModel folder.
        signatures: ``{name: concrete function}``, the signatures written.
        requests: ``{signature name: [{input name: nested list}, ...]}``.
        methods: ``{signature name: method name}`` (default: predict).
            A classify signature's ``inputs`` are serialized ``tf.Example``
            protos; they go in a ``ClassificationRequest``.
        defaults: the signatures whose requests are guessed
            (``default_warmup_inputs``): one the model fails on is left out,
            with a warning naming the error; a failing request that the
            object gave raises.

    Returns:
        The number of requests written (0 when ``tensorflow_serving`` is not
        installed: then no file is written, with a warning).
    """
    import tensorflow as tf

    try:
        from tensorflow_serving.apis import (
            classification_pb2,
            model_pb2,
            predict_pb2,
            prediction_log_pb2,
        )
    except ImportError:
        logger.warning(
            "The SavedModel has no TF Serving warmup requests (%s): writing them "
            "needs `pip install tensorflow-serving-api`.", WARMUP_FILE)
        return 0
    methods = methods or {}
    logs = []
    for name, inputs_list in requests.items():
        function = signatures[name]
        specs = {spec.name: spec for spec in input_specs(function)}
        for inputs in inputs_list:
            if sorted(inputs) != sorted(specs):
                raise ValueError(f"A warmup request of the signature {name!r} has the "
                                 f"inputs {sorted(inputs)}; it takes {sorted(specs)}.")
            # The request must run: a warmup that fails would fail the load.
            try:
                function(*[_tensor(inputs[k], spec) for k, spec in specs.items()])
            except tf.errors.OpError as error:
                if name not in defaults:
                    raise
                logger.warning(
                    "The signature %r fails on the warmup request %s (%s); it is "
                    "left out of %s.", name, _shorten(inputs), _reason(error), WARMUP_FILE)
                continue
            spec = model_pb2.ModelSpec(signature_name=name)
            if methods.get(name, PREDICT_METHOD) == CLASSIFY_METHOD:
                request = classification_pb2.ClassificationRequest(model_spec=spec)
                for serialized in inputs["inputs"]:
                    request.input.example_list.examples.add().ParseFromString(serialized)
                log = prediction_log_pb2.PredictionLog(
                    classify_log=prediction_log_pb2.ClassifyLog(request=request))
            else:
                request = predict_pb2.PredictRequest(model_spec=spec)
                for key, value in inputs.items():
                    request.inputs[key].CopyFrom(
                        tf.make_tensor_proto(value, dtype=specs[key].dtype))
                log = prediction_log_pb2.PredictionLog(
                    predict_log=prediction_log_pb2.PredictLog(request=request))
            logs.append(log)
    if not logs:
        return 0
    folder = os.path.join(path, os.path.dirname(WARMUP_FILE))
    os.makedirs(folder, exist_ok=True)
    with tf.io.TFRecordWriter(os.path.join(path, WARMUP_FILE)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())
    return len(logs)
