"""``kzoo bench``: run the benchmark scripts in bench/."""

import os

HELP = "run a benchmark from bench/ (a source checkout) on the chosen backend"
EXAMPLES = """
  kzoo bench --list
  kzoo bench bert --backend torch -- --dtype float32,bfloat16
  kzoo bench word2vec

Arguments after `--` go to the script (see bench/README.md).
"""


def bench_dir():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "bench")


#: Scripts in bench/ that measure nothing (report.py writes the benchmarks page).
NOT_BENCHMARKS = ("report",)


def scripts():
    folder = bench_dir()
    if not os.path.isdir(folder):
        return []
    return sorted(name[:-3] for name in os.listdir(folder)
                  if name.endswith(".py") and not name.startswith("_")
                  and name[:-3] not in NOT_BENCHMARKS)


def add_arguments(parser):
    parser.add_argument("name", nargs="?", help="the benchmark (bench/NAME.py)")
    parser.add_argument("script_args", nargs="*", metavar="-- ARGS",
                        help="passed to the script")
    parser.add_argument("--list", action="store_true", help="list the benchmarks")


def run(args):
    import difflib
    import subprocess
    import sys

    from kzoo.cli.environment import CommandError

    names = scripts()
    if not names:
        raise CommandError(f"{bench_dir()} does not exist: the benchmarks come with a "
                           "source checkout of kzoo (they are not in the wheel).")
    if args.list or not args.name:
        print("\n".join(names))
        return 0
    if args.name not in names:
        hint = difflib.get_close_matches(args.name, names, n=1)
        raise CommandError(f"no benchmark {args.name!r} in {bench_dir()}"
                           + (f"; did you mean {hint[0]!r}?" if hint else
                              f"; there are {', '.join(names)}"))
    import keras

    env = dict(os.environ, KERAS_BACKEND=keras.config.backend())
    command = [sys.executable, os.path.join(bench_dir(), f"{args.name}.py"),
               *args.script_args]
    print(f"running {' '.join(command[1:])} on {env['KERAS_BACKEND']}", flush=True)
    return subprocess.run(command, env=env).returncode
