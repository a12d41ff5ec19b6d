"""A learned eviction policy in the manner of LRB ("learning relaxed Belady"): gradient-boosted
trees from an expert's history and the ridge estimates to its next use, driving the study's
whole-arena simulation (study_data.simulate_arena). Needs python3-sklearn.

  simulate_learned_eviction.py distance CAP FEATURES TREES SAMPLE
      regress the log of the tokens until the next use, capped at CAP
  simulate_learned_eviction.py within H FEATURES TREES SAMPLE
      classify "used within the next H tokens"; expected wait H (1 - p) / p

FEATURES: all (history and ridge), history, ridge. TREES: boosting iterations. SAMPLE: the share
of the training rows (layer, token, expert) kept."""
import sys
import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

from study_data import *

docs = load_documents()
L = 8
train = [k for k in docs if 'train' in k]; test = [k for k in docs if 'test' in k]
mode, horizon, feature_set = sys.argv[1], float(sys.argv[2]), sys.argv[3]
trees, sample = int(sys.argv[4]), float(sys.argv[5])


def with_bias(k, l):
    return np.hstack([np.ones((docs[k][0].shape[1], 1)), docs[k][0][l]])


def fit(l, shift):  # ridge map from x_l(t) to the picks of t+shift
    return ridge(np.vstack([with_bias(k, l)[:-shift] for k in train]),
                 np.vstack([docs[k][1][l][shift:] for k in train]))


W = {(l, s): fit(l, s) for l in range(L) for s in (1, 2)}


def tokens_since_uses(P):
    """Tokens since each expert's last and second-last pick at t (0: picked at t; 1e4: never)."""
    last = np.full(P.shape, 1e4); second = np.full(P.shape, 1e4)
    at = np.full((P.shape[0], P.shape[2]), -1e4); before = at.copy()
    for t in range(P.shape[1]):
        used = P[:, t] > 0
        before = np.where(used, at, before); at = np.where(used, t, at)
        last[:, t] = t - at; second[:, t] = t - before
    return last, second


def features(k):
    """[L][T][E][F]: what is known after layer l of token t."""
    P = docs[k][1]; T = P.shape[1]
    last, second = tokens_since_uses(P)
    layers = []
    for l in range(L):
        f = []
        if feature_set in ('all', 'ridge'):
            f += [np.clip(with_bias(k, l) @ W[(l, s)], -0.5, 1.5) for s in (1, 2)]
        if feature_set in ('all', 'history'):
            for half_life in (2, 8, 32, 128):
                c = decayed(P[l], half_life); f.append(c / np.maximum(c.sum(1, keepdims=True), 1e-9) * 8)
            f += [np.log1p(last[l]), np.log1p(second[l])]
            f.append(np.cumsum(P[l], 0) / (np.arange(T)[:, None] + 1))
        f.append(np.full(P[l].shape, l, float))
        layers.append(np.stack(f, -1))
    return np.stack(layers)


start = time.time()
rng = np.random.default_rng(0)
rows, targets = [], []
for k in train:
    F = features(k); n = tokens_to_next_use(docs[k][1])
    y = np.log(np.minimum(n, horizon)) if mode == 'distance' else (n <= horizon).astype(int)
    keep = rng.random(y.size) < sample
    rows.append(F.reshape(-1, F.shape[-1])[keep]); targets.append(y.reshape(-1)[keep])
rows = np.vstack(rows); targets = np.concatenate(targets)
Model = HistGradientBoostingRegressor if mode == 'distance' else HistGradientBoostingClassifier
model = Model(max_iter=trees, learning_rate=0.1, max_leaf_nodes=63,
              categorical_features=[rows.shape[1] - 1], random_state=0).fit(rows, targets)
print(f'{len(targets)} rows, fitted in {time.time() - start:.0f} s', flush=True)

r = []
for k in test:
    F = features(k); shape = F.shape[:-1]; flat = F.reshape(-1, F.shape[-1])
    if mode == 'distance':
        wait = np.exp(model.predict(flat).reshape(shape)) - 1
    else:
        p = np.clip(model.predict_proba(flat)[:, 1].reshape(shape), 1e-4, 1)
        wait = horizon * (1 - p) / p
    r.append(simulate_arena(docs[k][1], None, wait_of=lambda l, t, rate: wait[l, t])[0])
print(mode, horizon, feature_set, trees, sample, [round(x, 3) for x in r], round(np.mean(r), 4),
      flush=True)
