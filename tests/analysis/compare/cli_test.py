import contextlib
import io
import json
import os

import pytest

from kzoo.cli import main
from kzoo.datasets import gensim_test_data_path

pytest.importorskip("gensim")
pytest.importorskip("matplotlib")


def _run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def test_help_has_an_example():
    code, out, _ = _run("compare", "--help")
    assert code == 0
    assert "kzoo compare --corpus austen.txt --minutes 10 --output" in out
    assert "python -m kzoo.datasets.austen austen.txt" in out
    for option in ("--corpus", "--minutes", "--output", "--families", "--seed", "--plan"):
        assert option in out


def test_bad_input_exits_2_with_the_problem(tmp_path):
    code, _, err = _run("compare", "--corpus", str(tmp_path / "none.txt"), "--minutes", "1",
                        "--output", str(tmp_path / "out"))
    assert code == 2 and "none.txt' does not exist" in err
    code, _, err = _run("compare", "--corpus", gensim_test_data_path("lee_background.cor"),
                        "--minutes", "1", "--output", str(tmp_path / "out"),
                        "--families", "bart")
    assert code == 2 and "No model family 'bart'" in err
    code, _, err = _run("compare", "--corpus", "x.txt", "--output", str(tmp_path))
    assert code == 2 and "--minutes" in err


@pytest.mark.skipif(not os.path.exists("/usr/share/wordnet/data.noun"),
                    reason="WordNet missing: apt-get install wordnet-base")
def test_run_writes_the_report_and_records_its_command(tmp_path):
    import keras

    corpus = gensim_test_data_path("lee_background.cor")
    output, work = tmp_path / "out", tmp_path / "work"
    code, out, err = _run("compare", "--corpus", corpus, "--minutes", "0.03",
                          "--output", str(output), "--work", str(work),
                          "--families", "word2vec", "--max-wordnet-pairs", "40")
    assert code == 0, err
    assert "== word2vec" in out and "frozen-feature probe" in out
    results = json.loads((output / "results.json").read_text())
    assert results["command"] == (
        f"kzoo compare --corpus {corpus} --minutes 0.03 --output {output} "
        f"--families word2vec --work {work} --max-wordnet-pairs 40 "
        f"--backend {keras.backend.backend()}")
    assert results["backend"] == keras.backend.backend() and results["minutes"] == 0.03
    assert (work / "word2vec" / "preset").is_dir() and not (output / "word2vec").exists()
    assert results["command"] in (output / "report.md").read_text()


@pytest.mark.without_tensorflow
@pytest.mark.backends("jax", "torch")
@pytest.mark.skipif(not os.path.exists("/usr/share/wordnet/data.noun"),
                    reason="WordNet missing: apt-get install wordnet-base")
def test_runs_without_tensorflow(tmp_path):
    from kzoo.testing.without_tensorflow import check_without_tensorflow

    output = check_without_tensorflow(f"""
        import json
        from kzoo.cli import main
        from kzoo.datasets import gensim_test_data_path
        code = main(["compare", "--corpus", gensim_test_data_path("lee_background.cor"),
                     "--minutes", "0.03", "--output", {str(tmp_path)!r},
                     "--families", "word2vec", "--max-wordnet-pairs", "40"])
        assert code == 0, code
        results = json.load(open({str(tmp_path / "results.json")!r}))
        print("FAMILIES", list(results["families"]))
    """)
    assert "FAMILIES ['word2vec']" in output
