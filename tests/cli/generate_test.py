"""`kzoo generate`: streamed output equals the generated text; the controls' flags."""

import kzoo
from kzoo import cli
from kzoo.cli.loading import load_task, saved_task_class


def _lm(folder):
    if saved_task_class(folder) is None:
        return kzoo.models.CausalLM.from_preset(folder)
    return load_task(folder, (kzoo.models.CausalLM,), "test")


def _run(capsys, model, *flags):
    assert cli.main(["generate", "--model", model, *flags]) == 0
    return capsys.readouterr().out


def test_stream_prints_the_generated_text(pretrained, capsys):
    model = pretrained("gpt")
    capsys.readouterr()  # the tiny model's training log
    flags = ["--prompt", "the old cat", "--prompt", "a", "--max-new-tokens", "8",
             "--repetition-penalty", "1.3", "--no-repeat-ngram-size", "2",
             "--stop-string", "zzz"]
    plain = _run(capsys, model, *flags)
    streamed = _run(capsys, model, *flags, "--stream")
    assert streamed == plain
    assert plain.splitlines()[0].startswith("the old cat")
    lm = _lm(model)
    expected = lm.generate(["the old cat", "a"], max_new_tokens=8,
                           repetition_penalty=1.3, no_repeat_ngram_size=2,
                           stop_strings=["zzz"])
    assert plain == "".join(text + "\n" for text in expected)


def test_beam_and_sampling_flags(pretrained, capsys):
    model = pretrained("gpt")
    capsys.readouterr()
    out = _run(capsys, model, "--prompt", "the dog", "--sampler", "beam",
               "--num-beams", "3", "--num-return-sequences", "2",
               "--length-penalty", "0.5", "--early-stopping", "never",
               "--max-new-tokens", "6")
    lm = _lm(model)
    expected = lm.generate("the dog", max_new_tokens=6, num_return_sequences=2,
                           sampler=kzoo.samplers.BeamSampler(
                               num_beams=3, length_penalty=0.5, early_stopping="never"))
    assert out == "".join(text + "\n" for text in expected)
    assert cli.main(["generate", "--model", model, "--prompt", "a",
                     "--num-return-sequences", "5", "--sampler", "beam",
                     "--num-beams", "2"]) == 2
    assert "num_beams >= 5" in capsys.readouterr().err
