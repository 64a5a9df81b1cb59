import pytest

from kzoo.analysis.compare import plots
from tests.analysis.compare.results_fixture import make_results

pytest.importorskip("matplotlib")


def _png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def _lines(monkeypatch, function, results, tmp_path):
    """The artists ``function`` drew, caught before the figure closes."""
    import matplotlib.pyplot as plt

    seen = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig: (seen.append(fig), close(fig)))
    function(results, str(tmp_path / "x.png"))
    assert _png(tmp_path / "x.png")
    return seen[0]


def test_polysemy_plot_has_each_familys_series(monkeypatch, tmp_path):
    results = make_results()
    fig = _lines(monkeypatch, plots.plot_polysemy, results, tmp_path)
    ax = fig.axes[0]
    lines = {line.get_label().split(":")[0]: line for line in ax.get_lines()}
    assert set(lines) == {"chance (0.5)", "word2vec", "ELMo", "GPT", "BERT"}
    for name, entry in results["families"].items():
        line = lines[entry["title"]]
        auc = entry["polysemy"]["test_auc"]
        assert list(line.get_ydata()) == (auc * 2 if len(auc) == 1 else auc)
        assert line.get_color() == plots.colours(results)[name]


def test_probe_bars_equal_the_headline_figures(monkeypatch, tmp_path):
    results = make_results()
    fig = _lines(monkeypatch, plots.plot_probes, results, tmp_path)
    ax = fig.axes[0]
    from matplotlib.container import BarContainer

    bars = {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers
            if isinstance(c, BarContainer)}
    for name, entry in results["families"].items():
        figures = plots.probe_figures(entry)
        expected = [figures[k][0] for k, _ in plots.PROBES if figures[k][0] is not None]
        assert bars[entry["title"]] == pytest.approx(expected)
    # word2vec: no analogy figure (its one layer has None) and no fine-tuning
    assert len(bars["word2vec"]) == 4 and len(bars["GPT"]) == 6


def test_loss_plot_has_a_panel_per_family(monkeypatch, tmp_path):
    results = make_results()
    fig = _lines(monkeypatch, plots.plot_losses, results, tmp_path)
    assert [ax.get_title() for ax in fig.axes] == ["word2vec", "ELMo", "GPT", "BERT"]
    curve = results["families"]["bert"]["cost"]["loss_curve"]
    assert list(fig.axes[3].get_lines()[0].get_ydata()) == [p[2] for p in curve]
