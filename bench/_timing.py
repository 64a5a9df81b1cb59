"""Timing helpers shared by the benchmarks in bench/ (no library imports)."""

import json
import os
import resource
import statistics
import subprocess
import sys
import time


def pin_cores(cores):
    """Runs this process on the last ``cores`` CPUs with as many threads.

    Call it before any library starts its thread pools: TF and XLA size
    them from the affinity mask and their flags, torch from OMP_NUM_THREADS.
    Does nothing for ``cores`` None or 0.
    """
    if not cores:
        return
    cpus = sorted(os.sched_getaffinity(0))[-cores:]
    os.sched_setaffinity(0, cpus)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ[var] = str(cores)
    os.environ["XLA_FLAGS"] = (
        f"--xla_cpu_multi_thread_eigen={'true' if cores > 1 else 'false'} "
        f"intra_op_parallelism_threads={cores}")


def prepare_worker(backend, cores, repo_root):
    """A worker process's setup, before Keras is imported.

    Pins it (``pin_cores``), selects the Keras backend (read once, at
    import), quiets TF's C++ logs, puts the repository on ``sys.path`` and,
    asked by ``KZOO_MALLOC_TUNING=1``, sets PyTorch workers' allocator
    (``malloc_tuning``).
    """
    pin_cores(cores)
    os.environ["KERAS_BACKEND"] = backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, repo_root)
    if backend == "torch" and malloc_tuning():
        from kzoo.ops.memory import reuse_freed_memory

        reuse_freed_memory()


def malloc_tuning():
    """Whether ``KZOO_MALLOC_TUNING=1`` asks for glibc's allocator setting
    (``kzoo.ops.memory.reuse_freed_memory``): then every PyTorch worker makes
    it before its rows run, kzoo's and the reference libraries' alike, and
    the results file records it (``malloc_tuning``)."""
    return os.environ.get("KZOO_MALLOC_TUNING") == "1"


BACKENDS = {"tf": "tensorflow", "jax": "jax", "torch": "torch"}
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_backend_arguments(parser, timeout=1800):
    """The arguments of a one-worker-per-backend benchmark's driver and worker.

    ``--worker``/``--backend`` (internal: the driver starts the workers),
    ``--backends``, ``--warmup``, ``--reps`` (None: the script's defaults,
    see ``fill_defaults``), ``--cores`` and ``--timeout``.
    """
    import argparse

    # A bare `--worker`, or `--worker kzoo` as `run_rows` starts the rows.
    parser.add_argument("--worker", nargs="?", const="kzoo", default=None,
                        help=argparse.SUPPRESS)
    parser.add_argument("--backend", choices=tuple(BACKENDS), default=None)
    parser.add_argument("--backends", default=None, help="e.g. tf,jax (driver)")
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument("--cores", type=int, default=None,
                        help="pin each worker to this many cores (the last ones)")
    parser.add_argument("--timeout", type=int, default=timeout, help="seconds per worker")


def add_sequential_argument(parser):
    """``--sequential``: rows one after another instead of taking turns
    (``run_rows``)."""
    parser.add_argument(
        "--sequential", action="store_true",
        help="run the rows one after another (each row's process alone) "
             "instead of interleaving their timed calls round robin; "
             "interleaving keeps the ratios on a machine whose speed drifts, "
             "at the cost of every row's process held in memory at once")


def fill_defaults(args, defaults):
    """Sets each ``args`` attribute in ``defaults`` that is still None."""
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(parse_args, worker_main, driver_main, argv=None):
    """A benchmark's entry point: the driver, or with ``--worker`` one worker.

    ``parse_args(argv)`` must give ``worker``, ``backend`` (a key of
    ``BACKENDS``) and ``cores``; the worker is prepared (``prepare_worker``)
    before ``worker_main(args)`` imports Keras.
    """
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        if args.backend is None:
            raise SystemExit("--worker needs --backend (tf, jax or torch)")
        prepare_worker(BACKENDS[args.backend], args.cores, REPO_ROOT)
        worker_main(args)
    else:
        driver_main(args, argv)


def time_calls(fn, warmup, reps):
    """Calls ``fn()`` ``warmup`` times untimed, then ``reps`` times timed.

    ``fn`` must block until its work is done (convert its result to numpy,
    or read a loss value), so that asynchronous backends are timed fully.
    In a worker that ``run_rows`` interleaves, each timed call waits for
    its turn (see ``run_rows``); the warmup calls run when they come.

    Returns:
        A dict with ``first_s`` (the first warmup call: tracing and
        compilation included), ``times_s`` (the timed calls) and
        ``median_s`` and ``cpu_median_s``.
    """
    first = None
    for i in range(warmup):
        start = time.perf_counter()
        fn()
        if i == 0:
            first = time.perf_counter() - start
    times, cpu_times = [], []
    for _ in range(reps):
        begun = begin_turn()
        fn()
        wall, cpu = end_turn(begun)
        times.append(wall)
        cpu_times.append(cpu)
    return {
        "first_s": first,
        "times_s": [round(t, 4) for t in times],
        "median_s": statistics.median(times),
        # CPU seconds of this process (all threads): less sensitive than wall
        # time to other processes on a shared machine, but inflated by
        # threads that spin while they wait (OpenMP).
        "cpu_median_s": statistics.median(cpu_times),
    }


def machine_info():
    """CPU count and load average: context for numbers from a shared box."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"cpus": os.cpu_count(), "load_avg": load}


def _cpu_seconds():
    """``(busy, stolen)``: CPU seconds the whole machine has spent busy (all
    processes) and those a virtual machine's host took away (steal), from
    /proc/stat; None where there is no /proc."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    fields += [0] * (8 - len(fields))
    tick = os.sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal
    busy = sum(fields[:3]) + fields[5] + fields[6]
    return busy / tick, fields[7] / tick


def _children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: other processes' average busy cores during a row above which the row is
#: marked as having run beside other work
BUSY_NEIGHBOUR_CORES = 0.25


def run_worker(argv, env_overrides=None, timeout=None, python=None):
    """Runs ``python <argv>`` in a fresh process; returns its last JSON line.

    ``python`` is the interpreter (default this one's, ``sys.executable``):
    another virtual environment's for a row whose libraries cannot be
    installed beside the others.

    The result gains ``"load"``: the load average before and after, and
    ``other_cores``, the average number of cores that *other* processes kept
    busy while the worker ran (machine busy time minus the worker's own CPU
    time, over the wall time), and ``stolen_cores``, those a virtual
    machine's host took (steal time). Above ``BUSY_NEIGHBOUR_CORES`` together
    the row ran beside other work and its numbers are low. A failed worker gives
    ``{"error": <last lines of its output>}`` instead of raising, so one
    broken row doesn't end a whole benchmark run.
    """
    env = dict(os.environ)
    env.update(env_overrides or {})
    load_before = machine_info()["load_avg"]
    cpu0, own0, wall0 = _cpu_seconds(), _children_cpu_seconds(), time.time()
    try:
        proc = subprocess.run(
            [python or sys.executable, *argv], env=env, capture_output=True, text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    cpu1, own1, wall1 = _cpu_seconds(), _children_cpu_seconds(), time.time()
    load = {"load_avg_before": load_before,
            "load_avg_after": machine_info()["load_avg"],
            "other_cores": None, "stolen_cores": None}
    if cpu0 is not None and wall1 > wall0:
        wall = wall1 - wall0
        load["other_cores"] = round(
            max(0.0, (cpu1[0] - cpu0[0]) - (own1 - own0)) / wall, 2)
        load["stolen_cores"] = round((cpu1[1] - cpu0[1]) / wall, 2)
    result = _worker_result(proc.stdout.splitlines(), proc.stderr, proc.returncode)
    result["load"] = load
    return result


def _worker_result(stdout_lines, stderr, returncode):
    """A worker's last JSON line, or ``{"error": <last lines of its
    output>}``."""
    for line in reversed(stdout_lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    tail = ("\n".join(stdout_lines) + "\n" + stderr).strip().splitlines()[-8:]
    return {"error": f"exit {returncode}: " + " | ".join(tail)}


#: set in the workers that ``run_rows`` interleaves: each timed call waits
#: for the driver's go on stdin and reports its time on stdout
TURNS_ENV = "KZOO_BENCH_TURNS"
_TURN_WAIT, _TURN_DONE = "@@turn-wait", "@@turn-done "


def _wait_for_turn():
    if os.environ.get(TURNS_ENV) != "1":
        return
    print(_TURN_WAIT, flush=True)
    if not sys.stdin.readline():
        raise SystemExit("the benchmark driver went away")


def _report_turn(wall, cpu, machine0, machine1):
    if os.environ.get(TURNS_ENV) != "1":
        return
    turn = {"wall": wall, "cpu": cpu}
    if machine0 is not None and machine1 is not None:
        turn["busy"] = machine1[0] - machine0[0]
        turn["steal"] = machine1[1] - machine0[1]
    print(_TURN_DONE + json.dumps(turn), flush=True)


def begin_turn():
    """Starts one timed turn (a ``time_calls`` call, or a word2vec epoch):
    in an interleaved worker, waits for the driver's go first. Returns the
    turn's start, for ``end_turn``."""
    _wait_for_turn()
    return _cpu_seconds(), time.perf_counter(), time.process_time()


def end_turn(begun):
    """Ends the turn that ``begin_turn`` started (reporting it to the
    driver in an interleaved worker); returns its ``(wall, cpu)``
    seconds, the CPU time this process's own."""
    machine0, start, cpu_start = begun
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    _report_turn(wall, cpu, machine0, _cpu_seconds())
    return wall, cpu


class _TurnWorker:
    """One interleaved worker process: its stdout read by a thread into a
    queue, its stderr kept in a temporary file (see ``run_rows``).
    ``timeout`` bounds its start and each of its turns."""

    def __init__(self, name, argv, env, timeout, python=None):
        import queue
        import tempfile
        import threading

        self.name, self.timeout = name, timeout
        self.lines, self.turns, self.output = queue.Queue(), [], []
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.load_before = machine_info()["load_avg"]
        self.proc = subprocess.Popen(
            [python or sys.executable, *argv], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)

        def read():
            for line in self.proc.stdout:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=read, daemon=True).start()
        self.done = False
        self.result = None

    def run_until_wait(self):
        """Reads the worker's output until it waits for its next turn (True)
        or ends (False; ``result`` is then set)."""
        import queue

        self.start = time.time()
        while True:
            left = self.start + self.timeout - time.time()
            try:
                line = self.lines.get(timeout=max(left, 0.01))
            except queue.Empty:
                self.proc.kill()
                self._finish({"error": f"timed out after {self.timeout} s"})
                return False
            if line is None:
                self.proc.wait()
                self._finish(self._parse())
                return False
            line = line.rstrip("\n")
            if line == _TURN_WAIT:
                return True
            if line.startswith(_TURN_DONE):
                self.turns.append(json.loads(line[len(_TURN_DONE):]))
            else:
                self.output.append(line)

    def go(self):
        try:
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()
        except BrokenPipeError:  # it died (killed for memory, say): its output
            pass                 # tells, read below
        return self.run_until_wait()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _parse(self):
        self.stderr.seek(0)
        return _worker_result(self.output, self.stderr.read(), self.proc.returncode)

    def _finish(self, result):
        # The load during this worker's timed calls only: the other workers
        # sat idle then, so anything busy besides it was other work.
        wall = sum(t["wall"] for t in self.turns)
        load = {"load_avg_before": self.load_before,
                "load_avg_after": machine_info()["load_avg"],
                "other_cores": None, "stolen_cores": None, "interleaved": True}
        if wall > 0 and all("busy" in t for t in self.turns):
            load["other_cores"] = round(max(0.0, sum(
                t["busy"] - t["cpu"] for t in self.turns)) / wall, 2)
            load["stolen_cores"] = round(sum(t["steal"] for t in self.turns) / wall, 2)
        result["load"] = load
        self.result, self.done = result, True
        self.stderr.close()


#: a new interleaved worker starts only with this much memory available
#: (a worker grows after its start: a BERT row builds its training model
#: after the inference reps); else the rows started so far run their turns
#: to the end first
MIN_AVAILABLE_BYTES = 5 * 2**30


def _available_memory():
    """MemAvailable from /proc/meminfo in bytes, None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def run_rows(script, rows, passthrough, timeout, interleave=True):
    """Runs benchmark rows; returns ``[(row name, result), ...]``.

    ``rows`` are ``(library, short_backend, dtype, several_dtypes)`` (the
    row named by ``row_name``, its command by ``_row_command``), or lists
    of them: groups that run one after another. See ``run_commands``.
    """
    groups = [list(r) for r in rows] if rows and isinstance(rows[0], list) else [rows]
    return run_commands(
        [[(row_name(library, short, dtype, several),
           *_row_command(script, library, short, dtype, passthrough))
          for library, short, dtype, several in group] for group in groups],
        timeout, interleave)


def run_commands(groups, timeout, interleave=True):
    """Runs groups of rows, each row ``(name, argv, environment overrides)``
    or ``(name, argv, environment overrides, python)`` (a worker command, as
    ``run_worker`` takes it); returns ``[(row name, result), ...]`` in the
    order given.

    The groups run one after another, one process per row. Without
    ``interleave`` the rows also run one after another (``run_worker``).
    With it (the default) the rows of a group take turns: the workers
    start one at a time (each builds its model and makes its untimed
    warmup calls while the others wait), then each timed call of every
    row is one turn (``time_calls``; word2vec's are its epochs), round
    robin (row 1's first call, row 2's first call, ..., row 1's second
    call, ...). A machine whose speed drifts over minutes (a shared VM)
    then moves every
    row of the group alike, and the ratios between them hold. Only one
    worker computes at a time; the others wait on a pipe, holding their
    memory: when less than ``MIN_AVAILABLE_BYTES`` is left, the rows
    started so far finish first (the output says so).
    """
    if not interleave:
        results = []
        for name, argv, env, *python in (row for group in groups for row in group):
            print(f"  running {name} ...", end=" ", flush=True)
            result = run_worker(argv, env_overrides=env, timeout=timeout,
                                python=python[0] if python else None)
            print("error" if "error" in result else "done", flush=True)
            results.append((name, result))
        return results
    results = []
    for group in groups:
        pending = list(group)
        while pending:
            workers = []
            try:
                while pending:
                    available = _available_memory()
                    if workers and available is not None and (
                            available < MIN_AVAILABLE_BYTES):
                        print(f"  ({available / 2**30:.1f} GiB of memory left: the "
                              f"{len(workers)} rows started take their turns "
                              "first)", flush=True)
                        break
                    workers.append(_start_turn_worker(pending.pop(0), timeout))
                rounds = 0
                while not all(w.done for w in workers):
                    rounds += 1
                    for worker in workers:
                        if not worker.done:
                            worker.go()
            finally:
                for worker in workers:
                    worker.kill()
            print(f"  {len(workers)} rows interleaved: {rounds} rounds, one timed "
                  "call of each row per round (--sequential: one row after "
                  "another)", flush=True)
            results += [(w.name, w.result) for w in workers]
    return results


def _row_command(script, library, short_backend, dtype, passthrough):
    """``(argv, environment overrides)`` of a row's worker: kzoo rows take
    ``--dtype``, the others ``--others-dtype``."""
    flag = "--dtype" if library == "kzoo" else "--others-dtype"
    argv = [os.path.abspath(script), "--worker", library, "--backend", short_backend,
            *passthrough, flag, dtype]
    return argv, {"KERAS_BACKEND": BACKENDS[short_backend], "TF_CPP_MIN_LOG_LEVEL": "2"}


def _start_turn_worker(row, timeout):
    name, argv, env_overrides, *python = row
    print(f"  starting {name} ...", end=" ", flush=True)
    worker = _TurnWorker(name, argv, dict(os.environ, **env_overrides, **{TURNS_ENV: "1"}),
                         timeout, python=python[0] if python else None)
    worker.run_until_wait()
    print("error" if worker.done and "error" in worker.result else "ready", flush=True)
    return worker


def row_name(library, short_backend, dtype, several_dtypes):
    """A table row's name: ``kzoo-jax``, or ``kzoo-jax bf16`` when the row's
    library runs in several dtypes."""
    name = f"{library}-{short_backend}"
    if several_dtypes:
        name += f" {SHORT_DTYPES.get(dtype, dtype)}"
    return name


SHORT_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "mixed_bfloat16": "mixed",
                "int8": "int8"}


def other_load(result):
    """Cores that other processes and the host (steal) took during a row
    (``run_worker``), or None where unknown."""
    load = result.get("load") or {}
    if load.get("other_cores") is None:
        return None
    return round(load["other_cores"] + (load.get("stolen_cores") or 0), 2)


def load_mark(result):
    """``"*"`` for a row that ran beside other work (see ``run_worker``)."""
    other = other_load(result)
    return "*" if other is not None and other > BUSY_NEIGHBOUR_CORES else ""


#: the legend of the ``others`` column that ``load_cell`` fills
LOAD_LEGEND = ("others: cores other processes and the VM host (steal) took "
               f"during the row (* above {BUSY_NEIGHBOUR_CORES}: ran beside "
               "other work)")


def load_cell(result, width=6):
    """The ``others`` column of a table row: ``other_load`` and its mark."""
    other = other_load(result)
    cell = format(other, f"{width}.2f") if other is not None else "-".rjust(width)
    return f" {cell}{load_mark(result)}"


def split_dtypes(parser, flag, value, allowed, worker):
    """A comma-separated dtype list from ``flag``, each in ``allowed``; one
    dtype only for a ``worker`` process (``parser.error`` otherwise)."""
    dtypes = value.split(",")
    for dtype in dtypes:
        if dtype not in allowed:
            parser.error(f"{flag}: {dtype!r} is not one of {', '.join(allowed)}")
    if worker and len(dtypes) > 1:
        parser.error(f"--worker takes one {flag}")
    return dtypes
