"""The frozen-feature probe's classifier: L2-regularised binary logistic
regression on standardised features, fitted by Newton's method (numpy), and
the stratified folds that choose a layer on the training part."""

import numpy as np


def _objective(theta, x, y, C):
    z = x @ theta
    # log(1 + exp(z)) - y z, summed: the negative log-likelihood
    return C * np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * theta[:-1] @ theta[:-1]


def fit_logistic_regression(features, labels, C=1.0, max_iter=100, tol=1e-10):
    """Binary logistic regression with an L2 penalty on the weights (not the
    intercept): minimises ``0.5 * |w|^2 + C * sum_i log(1 + exp(-s_i (x_i w
    + b)))`` with ``s_i = +-1``, scikit-learn's ``LogisticRegression(C=C)``
    objective. Newton steps with a backtracking line search, in float64,
    from zero: the same data give the same weights.

    Args:
        features: float ``[n, dim]``.
        labels: ``[n]`` of 0 and 1.
        C: float > 0. Inverse regularisation strength.

    Returns:
        ``(weights [dim], intercept)``.
    """
    x = np.asarray(features, np.float64)
    y = np.asarray(labels)
    if x.ndim != 2 or y.shape != (x.shape[0],):
        raise ValueError(f"`features` must be [n, dim] and `labels` [n], got shapes "
                         f"{x.shape} and {y.shape}.")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("`labels` must be 0 and 1 (a binary probe); got values "
                         f"{sorted(set(y.tolist()))[:5]}.")
    if not C > 0:
        raise ValueError(f"`C` must be > 0, got {C!r}.")
    if not np.isfinite(x).all():
        raise ValueError("`features` has NaN or infinite values: fill or drop them.")
    y = y.astype(np.float64)
    x = np.concatenate([x, np.ones((len(x), 1))], axis=1)
    penalty = np.ones(x.shape[1])
    penalty[-1] = 0.0
    theta = np.zeros(x.shape[1])
    loss = _objective(theta, x, y, C)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        gradient = C * x.T @ (p - y) + penalty * theta
        hessian = C * (x.T * (p * (1.0 - p))) @ x + np.diag(penalty)
        step = np.linalg.solve(hessian, gradient)  # positive definite
        rate = 1.0
        while rate > 1e-10:
            candidate = theta - rate * step
            new_loss = _objective(candidate, x, y, C)
            if new_loss <= loss:
                break
            rate /= 2
        else:
            break
        theta, converged = candidate, loss - new_loss <= tol * max(1.0, abs(loss))
        loss = new_loss
        if converged and np.max(np.abs(rate * step)) < 1e-8:
            break
    return theta[:-1], float(theta[-1])


def standardize(train, *others):
    """Each column scaled to mean 0 and standard deviation 1 on ``train``
    (a constant column is only centred); ``others`` scaled alike."""
    train = np.asarray(train, np.float64)
    mean, std = train.mean(axis=0), train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return [(np.asarray(x, np.float64) - mean) / std for x in (train,) + others]


def probe_accuracy(train_x, train_y, test_x, test_y, C=1.0):
    """Accuracy on the test part of a classifier fitted on standardised
    training features."""
    train_x, test_x = standardize(train_x, test_x)
    weights, intercept = fit_logistic_regression(train_x, train_y, C=C)
    predicted = (test_x @ weights + intercept) > 0
    return float(np.mean(predicted == np.asarray(test_y).astype(bool)))


def stratified_folds(labels, folds, seed=0):
    """``folds`` lists of positions into ``labels``, each class dealt round
    robin after a shuffle by ``numpy.random.default_rng(seed)``."""
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    parts = [[] for _ in range(folds)]
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        for i, member in enumerate(members):
            parts[i % folds].append(int(member))
    return [sorted(p) for p in parts]


def cross_validated_accuracy(features, labels, folds=5, C=1.0, seed=0):
    """Mean accuracy of the probe over stratified ``folds`` of these data."""
    labels = np.asarray(labels)
    if not isinstance(folds, int) or folds < 2:
        raise ValueError(f"`folds` must be an int >= 2, got {folds!r}.")
    if np.bincount(labels.astype(int)).min() < folds:
        raise ValueError(f"{folds}-fold cross-validation needs at least {folds} "
                         "examples of each class in the training part: pass fewer "
                         "`folds` or more sentences.")
    features = np.asarray(features, np.float64)
    accuracies = []
    for held in stratified_folds(labels, folds, seed):
        mask = np.zeros(len(labels), bool)
        mask[held] = True
        accuracies.append(probe_accuracy(features[~mask], labels[~mask],
                                         features[mask], labels[mask], C=C))
    return float(np.mean(accuracies))
