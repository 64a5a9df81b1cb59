"""The JSON file a benchmark's ``--json`` writes: its rows and what they ran on.

Every file in ``bench/results/`` has this form, and ``bench/report.py`` makes
the benchmarks page from them:

    benchmark  what was measured (``"bert"``, ``"word2vec skip-gram"``, ...)
    script     ``bench/<name>.py``
    command    the command line that produced the rows
    machine    the CPU's model name and core count (``/proc/cpuinfo``)
    date, time the run's end, ``YYYY-MM-DD`` and ``HH:MM:SS`` (UTC); the
               latest file of a day is the one with the latest time
    idle       true when every row's load was measured and none ran beside
               other work (``_timing.load_mark``)
    kzoo_commit, versions   the code and the libraries measured
    results    ``{row name: the row's worker result}``, in the table's order

Files transcribed from earlier tables carry ``source`` instead of the commit
and versions, ``order`` (whether the rows took turns), the time of the
commit that recorded them, and only the row fields those tables gave.
"""

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys

import _timing

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the distributions whose versions a result records (those installed)
LIBRARIES = ("keras", "tensorflow", "jax", "jaxlib", "torch", "keras-hub",
             "transformers", "gensim", "numpy", "onnxruntime")


def cpu_model():
    """The CPU's model name from ``/proc/cpuinfo`` (else ``platform``'s)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_description():
    """``"<cores>-core <CPU model>"``: the ``machine`` field."""
    return f"{os.cpu_count()}-core {cpu_model()}"


def kzoo_commit():
    """The checked-out commit (``+dirty`` with uncommitted changes), or None."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO_ROOT, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def versions():
    """Python's and the installed benchmark libraries' versions."""
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def metadata(benchmark, script, argv):
    """The fields of a results file besides ``results`` and ``idle``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "benchmark": benchmark,
        "script": f"bench/{os.path.basename(script)}",
        "command": " ".join(["python", f"bench/{os.path.basename(script)}", *argv]),
        "machine": machine_description(),
        "date": now.date().isoformat(),
        "time": now.time().replace(microsecond=0).isoformat(),
        "kzoo_commit": kzoo_commit(),
        "versions": versions(),
    }


def order(args):
    """The ``order`` field: how the rows of a run with ``args`` shared the
    machine (``--sequential``, else ``_timing.run_commands``' turns)."""
    return ("rows one after another" if getattr(args, "sequential", False)
            else "rows taking turns")


def write(path, benchmark, script, argv, results, **extra):
    """Writes ``results`` (``[(row name, result)]``) with ``metadata`` to
    ``path``; ``idle`` is true when every row's load is known and none ran
    beside other work (``_timing.load_mark``). ``extra``
    adds top-level fields (e.g. a published reference figure)."""
    results = list(results)
    data = metadata(benchmark, script, argv)
    data["idle"] = bool(results) and all(
        _timing.other_load(r) is not None and not _timing.load_mark(r) for _, r in results)
    data.update(extra)
    data["results"] = dict(results)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print(f"results written to {path}", file=sys.stderr)
