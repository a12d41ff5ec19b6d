"""How far ahead must a policy see? The whole-arena simulation of simulate_estimate_timing.py
(128 slots shared by all layers, evict the largest expected distance to the next use), with each
layer's expected distance built from estimates for the next K tokens and a geometric tail after
them.

  simulate_horizon.py ridge K    ridge maps from x_l(t) to the picks of t+1 .. t+K (K=1 is
                                 `predicted`)
  simulate_horizon.py oracle K   the true picks of t+1 .. t+K (what a perfect predictor would give)
  simulate_horizon.py MODE K N   the same with N of the 128 slots kept for units computed without
                                 caching them (admission: a missed unit expected back later than
                                 the victim is not cached)

Both use the same tail rate: for ridge, the mean of the K estimates mixed with the decayed
count; for oracle, the t+1 ridge estimate mixed with the count (what `predicted` uses)."""
import sys

import numpy as np

from study_data import *

docs = load_documents()
L = 8
train = [k for k in docs if 'train' in k]; test = [k for k in docs if 'test' in k]
mode, K = sys.argv[1], int(sys.argv[2])
bypass_places = int(sys.argv[3]) if len(sys.argv) > 3 else 0


def with_bias(k, l):
    return np.hstack([np.ones((docs[k][0].shape[1], 1)), docs[k][0][l]])


def fit(l, shift):  # ridge map from x_l(t) to the picks of t+shift
    return ridge(np.vstack([with_bias(k, l)[:-shift] for k in train]),
                 np.vstack([docs[k][1][l][shift:] for k in train]))


W = {(l, s): fit(l, s) for l in range(L) for s in range(1, (K if mode == 'ridge' else 1) + 1)}


r = []
for k in test:
    X, P = docs[k]
    est = {key: np.clip(with_bias(k, key[0]) @ w, 1e-3, 1) for key, w in W.items()}
    r.append(simulate_arena(P, est, K, oracle=mode == 'oracle', bypass_places=bypass_places))
hits = [x[0] for x in r]
print(mode, K, bypass_places, [round(x, 3) for x in hits], round(np.mean(hits), 4),
      'bypassed', round(np.mean([x[1] for x in r]), 4), flush=True)
