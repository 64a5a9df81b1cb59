"""References computed from the AllenNLP ELMo fixture (``allennlp_elmo``,
in the root conftest)."""

import json

import h5py
import numpy as np
import pytest


@pytest.fixture(scope="session")
def allennlp_reference(allennlp_elmo):
    """``(sentences, top)``: ``sentences[k][i]`` is row k of batch i (3 x 10),
    ``top[k][i]`` bilm-tf's top layer for it (forward | backward), computed
    with LSTM states carried from batch to batch in each row."""
    with open(allennlp_elmo / "sentences.json") as f:
        sentences = json.load(f)
    top = []
    for k in range(len(sentences)):
        with h5py.File(allennlp_elmo / f"lm_embeddings_{k}.hdf5", "r") as f:
            top.append([np.concatenate([f[str(i)][0], f[str(i)][1]], -1)
                        for i in range(len(sentences[k]))])
    return sentences, top
