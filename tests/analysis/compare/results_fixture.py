"""A results dict in schema 1 with made-up numbers, for testing the writers."""

import numpy as np

FAMILIES = (("word2vec", "word2vec", ["embedding"]),
            ("elmo", "ELMo", ["token", "lstm_1", "lstm_2"]),
            ("gpt", "GPT", ["embedding", "layer_1", "layer_2"]),
            ("bert", "BERT", ["embedding", "layer_1", "layer_2"]))


def make_results(seed=0, fine_tunes=("gpt", "bert")):
    rng = np.random.default_rng(seed)

    def values(n, low, high):
        return [round(float(v), 4) for v in rng.uniform(low, high, n)]

    families = {}
    for name, title, layers in FAMILIES:
        n = len(layers)
        accuracies = values(5, 0.5, 0.8)
        tuned = values(5, 0.5, 0.9)
        families[name] = {
            "title": title,
            "options": {"hidden_dim": 32, "num_layers": max(n - 1, 1)},
            "cost": {"parameters": int(rng.integers(10_000, 2_000_000)),
                     "steps": int(rng.integers(10, 500)),
                     "training_tokens": int(rng.integers(10_000, 900_000)),
                     "training_seconds": 60.0, "first_step_seconds": 2.0,
                     "preparation_seconds": 3.5,
                     "loss_curve": [[t, 10 * t, float(5 - t / 20)] for t in range(0, 60, 6)],
                     "held_out": {"loss": 4.25, "perplexity": 70.1}},
            "word_similarity": {"layers": layers, "wordsim353": values(n, -0.1, 0.4),
                                "simlex999": values(n, -0.1, 0.3),
                                "analogy": [None] + values(n - 1, 0, 0.1),
                                "pairs_scored": [{"wordsim353": 100 + i, "simlex999": 200 + i}
                                                 for i in range(n)],
                                "questions_scored": [300 + i for i in range(n)],
                                "pairs_covered": {"wordsim353": 120, "simlex999": 300},
                                "questions_covered": 410},
            "polysemy": {"layers": layers, "dev_auc": values(n, 0.4, 0.8),
                         "test_auc": values(n, 0.4, 0.8),
                         "test_accuracy": values(n, 0.4, 0.8)},
            "feature_probe": {"layer": layers[-1], "accuracies": accuracies,
                              "mean": float(np.mean(accuracies)),
                              "std": float(np.std(accuracies, ddof=1)),
                              "per_layer": {}},
            "fine_tuning": ({"accuracies": tuned, "mean": float(np.mean(tuned)),
                             "std": float(np.std(tuned, ddof=1)), "epochs": 3,
                             "learning_rate": 5e-5} if name in fine_tunes else None),
        }
    return {"schema": 1, "kzoo": "0.0.test", "backend": "jax",
            "machine": "2-core test CPU", "command": "kzoo compare --corpus c.txt "
            "--minutes 1 --output out", "seed": 0, "minutes": 1,
            "corpus": {"train_files": ["train.txt"], "held_out_files": ["held_out.txt"],
                       "documents": 300, "train_words": 54_000, "held_out_words": 6_000,
                       "sha256": "ab" * 32},
            "families": families}
