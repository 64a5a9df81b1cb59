"""The JSON file a benchmark's ``--json`` writes: its rows and what they ran on.

Every file in ``bench/results/`` has this form, and ``bench/report.py`` makes
the benchmarks page from them:

    benchmark  what was measured (``"bert"``, ``"word2vec skip-gram"``, ...)
    script     ``bench/<name>.py``
    command    the command line that produced the rows
    machine    ``machine_name(cpuinfo)``: cores, model name, cpu family,
               model and instruction set, one name per machine
    cpuinfo    the ``/proc/cpuinfo`` fields the name is made from
    date, time the run's end, ``YYYY-MM-DD`` and ``HH:MM:SS`` (UTC); the
               latest file of a day is the one with the latest time
    idle       true when every row's load was measured and none ran beside
               other work (``_timing.load_mark``)
    kzoo_commit, versions   the code and the libraries measured
    malloc_tuning  true when ``KZOO_MALLOC_TUNING=1`` gave every PyTorch
               worker glibc's allocator setting (``_timing.malloc_tuning``)
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


#: the instruction sets a machine's name gives, best first: (cpuinfo flag, name)
_ISA = (("amx_tile", "AMX"), ("avx512_bf16", "AVX-512 bf16"),
        ("avx512f", "AVX-512"), ("avx2", "AVX2"))


def cpuinfo(path="/proc/cpuinfo"):
    """The fields of ``/proc/cpuinfo`` that tell CPUs apart: ``model_name``,
    ``vendor_id``, ``cpu_family``, ``model`` (those present) and ``flags``
    (only those of ``_ISA``), with ``cores`` (``os.cpu_count()``)."""
    fields = {"cores": os.cpu_count()}
    keys = {"model name": "model_name", "vendor_id": "vendor_id",
            "cpu family": "cpu_family", "model": "model"}
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if not key:  # the first processor's block ends
                    break
                if key in keys:
                    fields[keys[key]] = value
                elif key == "flags":
                    flags = set(value.split())
                    fields["flags"] = [flag for flag, _ in _ISA if flag in flags]
    except OSError:
        fields["model_name"] = platform.processor() or platform.machine()
    return fields


def machine_name(fields):
    """One machine's name from its ``cpuinfo`` fields, the same in every
    results file: ``"2-core AMD EPYC (cpu family 25, model 17; AVX-512 bf16)"``."""
    details = []
    if fields.get("cpu_family") is not None:
        details.append(f"cpu family {fields['cpu_family']}")
    if fields.get("model") is not None:
        details.append(f"model {fields['model']}")
    isa = next((name for flag, name in _ISA if flag in fields.get("flags", ())), None)
    detail = ", ".join(details) + (f"; {isa}" if isa and details else isa or "")
    name = f"{fields.get('cores')}-core {fields.get('model_name') or 'CPU (not named)'}"
    return f"{name} ({detail})" if detail else name


def result_machine(data):
    """A results file's machine name: ``machine_name`` of its ``cpuinfo``
    fields; a file without them (transcribed, or written before the files
    recorded them) keeps its ``machine`` text."""
    return machine_name(data["cpuinfo"]) if data.get("cpuinfo") else data["machine"]


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
    fields = cpuinfo()
    return {
        "benchmark": benchmark,
        "script": f"bench/{os.path.basename(script)}",
        "command": " ".join(["python", f"bench/{os.path.basename(script)}", *argv]),
        "machine": machine_name(fields),
        "cpuinfo": fields,
        "date": now.date().isoformat(),
        "time": now.time().replace(microsecond=0).isoformat(),
        "kzoo_commit": kzoo_commit(),
        "malloc_tuning": _timing.malloc_tuning(),
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
    print(f"results written to {path} (malloc tuning "
          f"{'on' if data['malloc_tuning'] else 'off'} for the PyTorch rows)", file=sys.stderr)
