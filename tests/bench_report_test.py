"""bench/report.py: the benchmarks page is what the results files say."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.without_tensorflow  # needs no Keras at all


@pytest.fixture(scope="module")
def report():
    # report.py puts bench/ on sys.path as a script does; taken back here, or
    # `import onnx` in a later test of this process would find bench/onnx.py.
    path = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location("bench_report", ROOT / "bench" / "report.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
    return module


def test_committed_page_is_generated_from_the_committed_results(report, tmp_path):
    report.main(["--results", str(ROOT / "bench" / "results"), "--out", str(tmp_path),
                 "--no-chart"])
    generated = (tmp_path / "benchmarks.md").read_text()
    committed = (ROOT / "docs" / "benchmarks.md").read_text()
    assert committed == generated, (
        "docs/benchmarks.md differs from bench/results: run `python bench/report.py`")


def _bert_file(folder, name, machine, date, idle, kzoo, transformers, time="12:00:00"):
    rows = {
        "kzoo-torch": {"library": "kzoo", "backend": "torch", "dtype_infer": "float32",
                       "dtype_train": "float32", "infer_seq_per_s": kzoo,
                       "train_steps_per_s": kzoo / 100},
        "transformers-torch": {"library": "transformers", "backend": "torch",
                               "dtype_infer": "float32", "dtype_train": "float32",
                               "infer_seq_per_s": transformers,
                               "train_steps_per_s": transformers / 100},
    }
    data = {"benchmark": "bert", "script": "bench/bert.py", "command": f"cmd {name}",
            "machine": machine, "date": date, "time": time, "idle": idle, "results": rows}
    (folder / name).write_text(json.dumps(data))
    return data


def test_the_latest_idle_run_per_machine_is_the_one_shown(report, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    runs = [  # name, machine, date, idle, kzoo, transformers, time
        ("a-old.json", "machine A", "2026-01-01", True, 10.0, 20.0, "09:00:00"),
        ("a-new.json", "machine A", "2026-01-01", True, 30.0, 20.0, "18:00:00"),
        ("a-busy.json", "machine A", "2026-02-01", False, 5.0, 20.0, "09:00:00"),
        ("b-only.json", "machine B", "2026-01-05", True, 12.0, 16.0, "09:00:00"),
    ]
    written = {name: _bert_file(results, name, machine, date, idle, kzoo, hf, time)
               for name, machine, date, idle, kzoo, hf, time in runs}
    files = report.load(str(results))
    latest = report.latest_idle(files)["bert"]
    # The newest idle file of each machine, by date then time.
    expected = {}
    for name, data in sorted(written.items(),
                             key=lambda kv: (kv[1]["date"], kv[1]["time"], kv[0])):
        if data["idle"]:
            expected[data["machine"]] = name
    assert [(machine, name) for machine, name, _ in latest] == sorted(expected.items())

    page = report.markdown(files)
    for machine, name in expected.items():
        data = written[name]
        assert f"`{data['command']}`" in page
        for row, values in data["results"].items():
            assert f"| {row} |" in page
            assert f"| {values['infer_seq_per_s']:.1f} |" in page
    for name in set(written) - set(expected.values()):
        assert f"`{written[name]['command']}`" not in page  # not shown as a table
        assert f"`bench/results/{name}`" in page  # but listed in the history

    # The chart's bars: kzoo's best over transformers' best, per shown run.
    bars = {(label.split("\n")[1], label.split("\n")[0].split(", ")[1]): value
            for label, reference, value in report.chart_bars(files)
            if reference == "transformers"}
    for machine, name in expected.items():
        rows = written[name]["results"]
        for measure, key in (("inference", "infer_seq_per_s"),
                             ("fine-tuning", "train_steps_per_s")):
            want = rows["kzoo-torch"][key] / rows["transformers-torch"][key]
            assert bars[(machine, measure)] == pytest.approx(want)


def test_a_file_without_the_metadata_is_refused(report, tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"results": {}}))
    with pytest.raises(ValueError, match=r"x.json lacks \['benchmark'"):
        report.load(str(tmp_path))


def test_the_chart_is_the_same_png_for_the_same_results(report, tmp_path):
    pytest.importorskip("matplotlib")
    files = report.load(str(ROOT / "bench" / "results"))
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    report.chart(files, str(first))
    report.chart(files, str(second))
    data = first.read_bytes()
    assert data.startswith(b"\x89PNG") and data == second.read_bytes()
    assert b"tIME" not in data  # no timestamp chunk


@pytest.fixture(scope="module")
def results_module():
    import sys

    sys.path.insert(0, str(ROOT / "bench"))  # _results imports _timing as the scripts do
    try:
        spec = importlib.util.spec_from_file_location("bench_results", ROOT / "bench" / "_results.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


def _gpt_row(tokens, other_cores):
    return {"library": "kzoo", "backend": "jax", "dtype": "float32", "jit": True,
            "tokens_per_s_1": tokens, "load": {"other_cores": other_cores, "stolen_cores": 0.0}}


@pytest.mark.parametrize("loads", [(0.0, 0.1), (0.0, 0.9), (0.0, None)])
def test_a_script_written_file_carries_its_run_and_renders(report, results_module, tmp_path,
                                                           loads):
    import datetime
    import os

    rows = [(f"kzoo-jax {i}", _gpt_row(100.0 + i, load)) for i, load in enumerate(loads)]
    path = tmp_path / "run.json"
    results_module.write(str(path), "gpt", "/somewhere/bench/gpt.py", ["--reps", "3"], rows,
                         order="rows taking turns")
    data = json.loads(path.read_text())
    assert data["script"] == "bench/gpt.py"
    assert data["command"] == "python bench/gpt.py --reps 3"
    assert data["machine"].startswith(f"{os.cpu_count()}-core ")
    datetime.date.fromisoformat(data["date"])
    datetime.time.fromisoformat(data["time"])
    assert data["versions"]["python"]
    # Idle only when every row's load is known and none is above the mark.
    busy = results_module._timing.BUSY_NEIGHBOUR_CORES
    assert data["idle"] == all(load is not None and load <= busy for load in loads)
    assert list(data["results"]) == [name for name, _ in rows]
    page = report.markdown(report.load(str(tmp_path)))
    assert ("| kzoo-jax 0 |" in page) == data["idle"]


def _onnx_row(library, dtype, batch_32, batch_1, check):
    return {"library": library, "dtype": dtype, "check": check,
            "seq_per_s_32x128": batch_32, "seq_per_s_1x16": batch_1,
            "shapes": {"32x128": {"call_median_s": 32 / batch_32},
                       "1x16": {"call_median_s": 1 / batch_1}}}


def test_an_onnx_run_shows_kzoo_over_the_same_dtype_and_transformers_fp32(report, tmp_path):
    rows = {  # name: (library, dtype, 32x128 seq/s, 1x16 seq/s)
        "kzoo-onnx fp32": ("kzoo", "float32", 60.0, 200.0),
        "kzoo-onnx int8": ("kzoo", "int8", 150.0, 500.0),
        "st-onnx fp32": ("sentence-transformers", "float32", 50.0, 160.0),
        "st-onnx int8": ("sentence-transformers", "int8", 100.0, 400.0),
        "transformers fp32": ("transformers", "float32", 40.0, 80.0),
        "transformers bf16": ("transformers", "bfloat16", 45.0, 90.0),
    }
    checks = {"float32": {"max_abs_diff": 2.5e-7, "min_cosine": 1.0},
              "int8": {"max_abs_diff": 0.02, "min_cosine": 0.9912},
              "bfloat16": {"max_abs_diff": 0.01, "min_cosine": 0.9998}}
    data = {"benchmark": "onnx", "script": "bench/onnx.py", "command": "cmd onnx",
            "machine": "machine A", "date": "2026-01-01", "time": "12:00:00", "idle": True,
            "order": "rows taking turns",
            "results": {name: _onnx_row(lib, dtype, a, b, checks[dtype])
                        for name, (lib, dtype, a, b) in rows.items()}}
    (tmp_path / "onnx.json").write_text(json.dumps(data))
    files = report.load(str(tmp_path))
    page = report.markdown(files)
    hf32 = rows["transformers fp32"]
    for name, (lib, dtype, a, b) in rows.items():
        st = next((v for v in rows.values()
                   if v[0] == "sentence-transformers" and v[1] == dtype), None)
        check = checks[dtype]
        agree = (f"{check['max_abs_diff']:.1e}" if dtype == "float32"
                 else f"{check['min_cosine']:.4f}")
        cells = [name, dtype, agree,
                 f"{a:.1f}", f"{a / st[2]:.2f}" if lib == "kzoo" else "-", f"{a / hf32[2]:.2f}",
                 f"{1e3 / b:.2f}", f"{b / st[3]:.2f}" if lib == "kzoo" else "-",
                 f"{b / hf32[3]:.2f}"]
        assert "| " + " | ".join(cells) + " |" in page
    # The chart: kzoo's best row over each reference's best row, per shape.
    bars = {(label.split("\n")[0], ref): value
            for label, ref, value in report.chart_bars(files)}
    assert bars[("MiniLM on ONNX Runtime, batch 32 x 128", "sentence-transformers")] == (
        pytest.approx(150.0 / 100.0))
    assert bars[("MiniLM on ONNX Runtime, batch 1 x 16", "transformers")] == (
        pytest.approx(500.0 / 90.0))


_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
flags\t\t: fpu avx2 avx512f avx512_bf16 sse

processor\t: 1
model name\t: another block, not read
"""


def test_one_machine_name_from_cpuinfo(results_module, tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(_CPUINFO)
    fields = results_module.cpuinfo(str(path))
    assert fields["model_name"] == "AMD EPYC" and fields["cpu_family"] == "26"
    assert fields["model"] == "2" and fields["flags"] == ["avx512_bf16", "avx512f", "avx2"]
    fields["cores"] = 2
    assert results_module.machine_name(fields) == (
        "2-core AMD EPYC (cpu family 26, model 2; AVX-512 bf16)")
    # A file without the fields keeps its text; one with them is named by them.
    assert results_module.result_machine({"machine": "2-core box"}) == "2-core box"
    assert results_module.result_machine(
        {"machine": "free text", "cpuinfo": fields}) == results_module.machine_name(fields)


def test_files_of_one_machine_share_its_name_on_the_page(report, results_module, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    fields = {"cores": 2, "model_name": "AMD EPYC", "cpu_family": "26", "model": "2",
              "flags": ["avx512_bf16"]}
    for name, text, date in (("a.json", "2-core AMD EPYC", "2026-01-01"),
                             ("b.json", "AMD EPYC (Zen 5) with bf16 units", "2026-01-02")):
        data = _bert_file(results, name, text, date, True, 10.0, 20.0)
        data["cpuinfo"] = fields
        (results / name).write_text(json.dumps(data))
    files = report.load(str(results))
    name = results_module.machine_name(fields)
    assert [(machine, file) for machine, file, _ in report.latest_idle(files)["bert"]] == [
        (name, "b.json")]
    page = report.markdown(files)
    assert "Zen 5" not in page and "2-core AMD EPYC |" not in page
    assert page.count(f"{name}") == 3  # the table's heading and both history lines


def test_a_figure_published_for_another_machine_is_a_note_not_a_ratio(report, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    data = {"benchmark": "elmo full", "script": "bench/elmo.py", "command": "cmd elmo",
            "machine": "2-core box", "date": "2026-01-01", "idle": True,
            "reference_sentences_per_s": {"AllenNLP 2.10": 15.0},
            "results": {"kzoo-jax": {"library": "kzoo", "sentences_per_s": 30.0}}}
    (results / "elmo.json").write_text(json.dumps(data))
    files = report.load(str(results))
    assert report.chart_bars(files) == []
    page = report.markdown(files)
    assert "| kzoo-jax | - | - | 30.0 |" in page
    assert "AllenNLP 2.10's published figure" in page and "15.0 sentences/s" in page
    assert "2.00" not in page and "x AllenNLP" not in page
