"""The ``kzoo`` command: one entry point, one module per subcommand.

Each subcommand module holds ``HELP`` (one line), ``EXAMPLES`` (shown by
``--help``), ``add_arguments(parser)`` and ``run(args)``. Only the command
being run gets its options: ``kzoo --help`` answers at once, and nothing
imports Keras before ``--backend`` sets ``KERAS_BACKEND``. A command whose
options come from the family records (``READS_FAMILIES = True``: ``kzoo
pretrain``) has the backend set and the families loaded before its parser
is built.
"""

import argparse
import difflib
import importlib
import re
import sys

from kzoo.cli.environment import BACKENDS, CommandError
from kzoo.cli.environment import prepare as prepare_environment

COMMANDS = ("demo", "presets", "prepare", "pretrain", "finetune", "evaluate", "export",
            "embed", "generate", "similar", "bench", "polysemy", "compare")


class Parser(argparse.ArgumentParser):
    """argparse that suggests the nearest valid choice or option."""

    def error(self, message):
        hint = None
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            options = re.findall(r"'([^']*)'", choice.group(2))
            hint = difflib.get_close_matches(choice.group(1), options, n=1)
        unknown = re.search(r"unrecognized arguments: (.*)", message)
        if unknown:
            known = [o for action in self._actions for o in action.option_strings]
            for word in unknown.group(1).split():
                if word.startswith("-"):
                    hint = difflib.get_close_matches(word.split("=")[0], known, n=1)
                    if hint:
                        break
        if hint:
            message += f"; did you mean {hint[0]!r}?"
        super().error(message)


def _add_common(parser):
    parser.add_argument("--backend", choices=BACKENDS, default=None,
                        help="Keras backend (sets KERAS_BACKEND; default: "
                             "KERAS_BACKEND, else tensorflow, else the first "
                             "of jax and torch installed)")
    parser.add_argument("--verbose", action="store_true",
                        help="keep TensorFlow's / XLA's log lines and show tracebacks")


def build_parser(command=None):
    """The ``kzoo`` parser; only ``command``'s subparser gets its options
    and example (none when ``command`` is None: ``kzoo --help``)."""
    parser = Parser(
        prog="kzoo", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="word2vec, ELMo, GPT and BERT on Keras 3 (TensorFlow, JAX, "
                    "PyTorch).\n\nRun `kzoo COMMAND --help` for a command's "
                    "options and an example.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    parser.commands = {}
    for name in COMMANDS:
        module = importlib.import_module(f"kzoo.cli.{name}")
        subparser = sub.add_parser(
            name, help=module.HELP, description=module.HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == command:
            subparser.epilog = "example:\n" + _examples(module).strip("\n")
            module.add_arguments(subparser)
            _add_common(subparser)
        subparser.set_defaults(module=module)
        parser.commands[name] = subparser
    return parser


def _examples(module):
    examples = module.EXAMPLES
    return examples() if callable(examples) else examples


def _command_in(argv):
    """The subcommand named in ``argv`` (the first word not an option), or None."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _peek(argv):
    """``--backend`` and ``--verbose`` as given in ``argv``, before parsing."""
    backend, verbose = None, "--verbose" in argv
    for i, word in enumerate(argv):
        if word == "--backend" and i + 1 < len(argv):
            backend = argv[i + 1]
        elif word.startswith("--backend="):
            backend = word.split("=", 1)[1]
    return (backend if backend in BACKENDS else None), verbose


def main(argv=None):
    """Runs ``kzoo`` with ``argv`` (default ``sys.argv[1:]``); returns the
    exit status (0 done, 1 failed, 2 bad usage or input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(argv)
    if command and getattr(importlib.import_module(f"kzoo.cli.{command}"),
                           "READS_FAMILIES", False):
        try:
            prepare_environment(*_peek(argv))
        except CommandError as exc:
            print(f"kzoo {command}: error: {exc}", file=sys.stderr)
            return 2
    parser = build_parser(command)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the subcommand's parser knows which option was meant
        parser.commands[args.command].error(
            f"unrecognized arguments: {' '.join(unknown)}")
    try:
        prepare_environment(args.backend, args.verbose)
        return args.module.run(args) or 0
    except (CommandError, FileNotFoundError, ValueError, KeyError) as exc:
        if args.verbose:
            raise
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"kzoo {args.command}: error: {message}", file=sys.stderr)
        return 2
