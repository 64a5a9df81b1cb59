"""What bench/profile_*.py share: kzoo and transformers taking turns on the
wall clock, then ``torch.profiler`` per ATen op, printed side by side."""

import time


def interleaved_wall(runs, reps):
    """Runs each of ``runs`` (``{name: fn}``) twice untimed, then ``reps``
    times in turns; returns ``{name: [seconds, ...]}``. Taking turns keeps
    the ratio meaningful on a loaded machine, where absolute times are not."""
    for fn in runs.values():
        fn(), fn()
    wall = {name: [] for name in runs}
    for _ in range(reps):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            wall[name].append(time.perf_counter() - start)
    return wall


def profile_ops(runs, calls, per):
    """``{name: {op: (self CPU ms, calls)}}`` per unit of work: each run is
    called ``calls`` times under ``torch.profiler`` and its totals divided
    by ``per`` (the units of work those calls did: passes, new tokens)."""
    from torch.profiler import ProfilerActivity, profile

    ops = {}
    for name, fn in runs.items():
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(calls):
                fn()
        ops[name] = {e.key: (e.self_cpu_time_total / 1e3 / per, e.count / per)
                     for e in prof.key_averages()}
    return ops


def print_op_table(ops, top, unit, width=52):
    """The ``top`` ops by the larger self CPU time of kzoo and transformers,
    then each one's totals a ``unit`` (a pass, a new token)."""
    names = ("kzoo", "transformers")
    keys = sorted(set(ops["kzoo"]) | set(ops["transformers"]),
                  key=lambda k: -max(ops[n].get(k, (0, 0))[0] for n in names))
    print(f"{f'op (self CPU ms {unit}, calls)':<{width}} {'kzoo':>16} {'transformers':>16}")
    for key in keys[:top]:
        cells = []
        for name in names:
            ms, calls = ops[name].get(key, (0.0, 0))
            cells.append(f"{ms:8.2f} x{calls:<6.1f}" if calls else f"{'-':>16}")
        print(f"{key[:width]:<{width}} {cells[0]:>16} {cells[1]:>16}")
    for name in names:
        total_ms = sum(ms for ms, _ in ops[name].values())
        calls = sum(c for _, c in ops[name].values())
        print(f"{name}: all ops' self CPU {total_ms:.2f} ms, {calls:.0f} op calls {unit}")
