"""AllenNLP's tiny test ELMo and its reference activations, fetched on demand.

The ``allennlp==0.9.0`` wheel ships ``allennlp/tests/fixtures/elmo/``: a
real-format ELMo (``options.json``, ``lm_weights.hdf5``), the sentences of
its reference run (``sentences.json``), the top-layer activations bilm-tf
computed for them (``lm_embeddings_{0,1,2}.hdf5``) and the token layer for a
vocabulary (``vocab_test.txt``, ``elmo_token_embeddings.hdf5``). The wheel
is fetched with ``pip download --no-deps`` (never installed: allennlp 0.9
does not install beside this stack) and only that folder is unpacked into a
cache folder, ``$KZOO_CACHE`` or ``~/.cache/kzoo``. Nothing is committed to
git.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "allennlp==0.9.0"
MEMBER = "allennlp/tests/fixtures/elmo/"
FILES = ("options.json", "lm_weights.hdf5", "sentences.json",
         "lm_embeddings_0.hdf5", "lm_embeddings_1.hdf5", "lm_embeddings_2.hdf5",
         "vocab_test.txt", "elmo_token_embeddings.hdf5")


class FixtureUnavailable(RuntimeError):
    """The fixture could not be fetched (no network, no pip)."""


def cache_dir():
    return Path(os.environ.get("KZOO_CACHE", Path.home() / ".cache" / "kzoo"))


def allennlp_elmo_fixture():
    """The folder holding AllenNLP 0.9.0's ELMo test fixture.

    Returns:
        A ``Path`` with the files in ``FILES``, fetched on the first call.

    Raises:
        FixtureUnavailable: pip could not download the wheel (offline, no
            PyPI); the message says what pip said.
    """
    target = cache_dir() / "allennlp-0.9.0-elmo-fixture"
    if all((target / name).is_file() for name in FILES):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        tmp = Path(tmp)
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-q",
             WHEEL, "-d", str(tmp)],
            capture_output=True, text=True, timeout=300,
        )
        wheels = list(tmp.glob("allennlp-*.whl"))
        if result.returncode != 0 or not wheels:
            raise FixtureUnavailable(
                f"`pip download --no-deps {WHEEL}` failed ({result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[-300:]}"
            )
        unpacked = tmp / "elmo"
        unpacked.mkdir()
        with zipfile.ZipFile(wheels[0]) as wheel:
            for name in FILES:
                with wheel.open(MEMBER + name) as src, open(unpacked / name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        try:
            unpacked.rename(target)  # atomic; another process may have won
        except OSError:
            if not all((target / name).is_file() for name in FILES):
                raise
    return target
