"""``kzoo export``: a preset folder → a SavedModel that takes raw strings, a
transformers folder, a keras-hub preset folder, or an ONNX model with its
``tokenizer.json``."""

HELP = ("export a trained model as a TensorFlow SavedModel (string inputs), a "
        "Hugging Face transformers folder, a keras-hub preset or ONNX "
        "(model.onnx + tokenizer.json)")
EXAMPLES = """
  kzoo export --model runs/sentiment --output exported/sentiment
  kzoo export --model runs/sentiment --output hf/sentiment --format transformers
  kzoo export --model runs/sentiment --output hub/sentiment --format keras-hub
  kzoo export --model runs/sentiment --output serving/sentiment --version 1
  kzoo export --model runs/sentiment --output onnx/sentiment --format onnx
  kzoo export --model runs/sentiment --output onnx/sentiment-int8 --format onnx --int8
  kzoo export --model runs/elmo --output exported/elmo     # TF-Hub ELMo signatures
  kzoo export --model runs/elmo --output onnx/elmo --format onnx   # character ids in

Serve it: `import tensorflow_text` (registers the tokenizer's ops), then
tf.saved_model.load(DIR).signatures["serving_default"](text=tf.constant([...])).
With --format transformers: transformers.AutoModel.from_pretrained(DIR) (or the
task's AutoModelFor... class) and AutoTokenizer.from_pretrained(DIR).
With --format keras-hub: keras_hub.models.BertTextClassifier.from_preset(DIR) (or
BertBackbone, GPT2Backbone, GPT2CausalLM: the class of the exported model).
With --format onnx: onnxruntime.InferenceSession(DIR/model.onnx) fed the ids of
tokenizers.Tokenizer.from_file(DIR/tokenizer.json).
"""


def add_arguments(parser):
    parser.add_argument("--model", required=True,
                        help="a folder written by kzoo pretrain / finetune")
    parser.add_argument("--output", required=True,
                        help="the folder to write (a SavedModel, a transformers "
                             "folder, a keras-hub preset, an ONNX folder)")
    parser.add_argument("--format",
                        choices=("saved_model", "transformers", "keras-hub", "onnx"),
                        default="saved_model",
                        help="saved_model (default): a TensorFlow SavedModel for TF "
                             "Serving; transformers: config.json + model.safetensors "
                             "+ tokenizer files for transformers' from_pretrained; "
                             "keras-hub: a keras-hub preset folder (BERT backbone "
                             "or classifier, GPT-2 backbone or causal LM) for "
                             "keras_hub.models.<Class>.from_preset; onnx: "
                             "model.onnx + tokenizer.json for onnxruntime and "
                             "tokenizers")
    parser.add_argument("--version", type=int, default=None,
                        help="write OUTPUT/VERSION/ (TF Serving's layout)")
    parser.add_argument("--int8", action="store_true",
                        help="with --format onnx: int8 weights (onnxruntime's "
                             "dynamic quantization)")
    parser.add_argument("--sequence-length", type=int, default=None,
                        help="fix the serving sequence length (default the "
                             "preprocessor's; with onnx, the length "
                             "tokenizer.json pads to)")


def run(args):
    import os

    import kzoo
    from kzoo.cli.environment import CommandError
    from kzoo.cli.loading import family, load_task

    if args.int8 and args.format != "onnx":
        raise CommandError("--int8 is an ONNX option: add --format onnx.")
    if args.format in ("transformers", "keras-hub"):
        return _run_folder(args)
    if args.format == "onnx":
        return _run_onnx(args)
    from kzoo.preprocessing.engine import (
        TensorFlowNotInstalledError,
        require_tensorflow,
    )

    try:  # before loading anything
        require_tensorflow("`kzoo export` (a TensorFlow SavedModel)")
    except TensorFlowNotInstalledError as error:
        raise CommandError(str(error)) from None
    if not os.path.exists(args.model) and os.sep in args.model:
        raise FileNotFoundError(f"the model folder {args.model} does not exist")
    record = family(args.model)
    if record.export is not None:  # what the family serves (ELMo: TF-Hub's module)
        model = record.export(args.model)
    else:
        model = load_task(args.model, what="kzoo export")
    kzoo.export.saved_model(model, args.output, sequence_length=args.sequence_length,
                            version=args.version)
    where = args.output if args.version is None else os.path.join(
        args.output, str(args.version))
    print(f"exported the {type(model).__name__} as a SavedModel to {where}")
    return 0


def _run_folder(args):
    """``--format transformers`` or ``keras-hub``: the task (or the
    backbone and its tokenizer) written as the other library's folder."""
    import os

    import kzoo
    from kzoo.cli.environment import CommandError
    from kzoo.cli.loading import saved_task_class
    from kzoo.presets.errors import PresetError

    for option in ("version", "sequence_length"):
        if getattr(args, option) is not None:
            raise CommandError(f"--{option.replace('_', '-')} is a SavedModel option; "
                               f"--format {args.format} takes none.")
    if not os.path.exists(args.model) and os.sep in args.model:
        raise FileNotFoundError(f"the model folder {args.model} does not exist")
    cls = saved_task_class(args.model)
    tokenizer = None
    if cls is not None:
        model = cls.from_preset(args.model)
    else:  # a backbone preset: the backbone and its tokenizer
        model = kzoo.models.Backbone.from_preset(args.model)
        try:
            tokenizer = kzoo.tokenizers.Tokenizer.from_preset(args.model)
        except (PresetError, FileNotFoundError, ValueError):  # it has none
            tokenizer = None
    writer, kind = ((kzoo.export.hugging_face, "a Hugging Face folder")
                    if args.format == "transformers"
                    else (kzoo.export.keras_hub, "a keras-hub preset"))
    try:
        where = writer(model, args.output, tokenizer=tokenizer)
    except (ValueError, TypeError) as error:
        raise CommandError(str(error)) from None
    print(f"exported the {type(model).__name__} as {kind} to {where}")
    return 0


def _run_onnx(args):
    import os

    import kzoo
    from kzoo.cli.environment import CommandError
    from kzoo.cli.loading import family, load_task

    if args.version is not None:
        raise CommandError("--version is a SavedModel option; --format onnx takes none.")
    if not os.path.exists(args.model) and os.sep in args.model:
        raise FileNotFoundError(f"the model folder {args.model} does not exist")
    record = family(args.model)
    if record.export is not None:  # what the family serves (ELMo: TF-Hub's outputs)
        model = record.export(args.model)
    else:
        model = load_task(args.model, what="kzoo export --format onnx")
    try:
        where = kzoo.export.onnx(model, args.output, sequence_length=args.sequence_length,
                                 quantize="int8" if args.int8 else None)
    except (ValueError, TypeError) as error:
        raise CommandError(str(error)) from None
    files = ", ".join(sorted(os.listdir(where)))
    print(f"exported the {type(model).__name__} as ONNX ({files}) to {where}")
    return 0
