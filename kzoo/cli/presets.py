"""``kzoo presets``: the registered presets and whether their weights are here."""

import importlib.util

HELP = "list the registered presets, their source, and whether they are installed"
EXAMPLES = """
  kzoo presets
  kzoo presets --family bert
"""

SIZE_KEYS = (("num_layers", "layers"), ("hidden_dim", "hidden"),
             ("num_heads", "heads"), ("vocabulary_size", "vocabulary"))


def add_arguments(parser):
    parser.add_argument("--family", default=None,
                        help="only this family (word2vec, elmo, gpt, bert)")


def _size(entry):
    config = entry.get("config") or {}
    return ", ".join(f"{label} {config[key]}" for key, label in SIZE_KEYS
                     if key in config)


def _availability(source):
    module = source.get("module")
    if source.get("type") == "pip_package" and module:
        if importlib.util.find_spec(module) is not None:
            return f"installed (pip package {source.get('pip', module)})", None
        return "not installed", f"pip install {source.get('pip', module)}"
    if source.get("path"):
        return f"from {source['path']}", None
    return source.get("type", "?"), None


def run(args):
    import keras

    from kzoo.presets.preset_registry import registered_presets

    print(f"Keras {keras.__version__} on the {keras.config.backend()} backend")

    entries = sorted(registered_presets().items())
    if args.family:
        entries = [(n, e) for n, e in entries if e.get("family") == args.family]
    if not entries:
        print(f"no registered presets{' of family ' + args.family if args.family else ''}")
        return 0
    for name, entry in entries:
        state, install = _availability(entry.get("source") or {})
        print(f"{name}  [{entry.get('family', '?')}]  {state}")
        if _size(entry):
            print(f"    size: {_size(entry)}")
        print(f"    {entry.get('description', '')}")
        if install:
            print(f"    to install: {install}")
    return 0
