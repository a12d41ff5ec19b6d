"""How far ahead must a policy see? The whole-arena simulation of sim2.py (128 slots shared by
all layers, evict the largest expected distance to the next use), with each layer's expected
distance built from estimates for the next K tokens and a geometric tail after them.

  horizon.py ridge K   ridge maps from x_l(t) to the picks of t+1 .. t+K (K=1 is `predicted`)
  horizon.py oracle K  the true picks of t+1 .. t+K (what a perfect predictor would give)

Both use the same tail rate: for ridge, the mean of the K estimates mixed with the decayed
count; for oracle, the t+1 ridge estimate mixed with the count (what `predicted` uses)."""
import sys

import numpy as np

from study_data import *

docs = load_documents()
L = 8; E = 64; SLOTS = 128; MIX = 0.5
train = [k for k in docs if 'train' in k]; test = [k for k in docs if 'test' in k]
mode, K = sys.argv[1], int(sys.argv[2])


def with_bias(k, l):
    return np.hstack([np.ones((docs[k][0].shape[1], 1)), docs[k][0][l]])


def fit(l, shift):  # ridge map from x_l(t) to the picks of t+shift
    A = np.vstack([with_bias(k, l)[:-shift] for k in train])
    Y = np.vstack([docs[k][1][l][shift:] for k in train])
    G = A.T @ A
    return np.linalg.solve(G + 1e-3 * np.mean(np.diag(G)) * np.eye(G.shape[0]), A.T @ Y)


W = {(l, s): fit(l, s) for l in range(L) for s in range(1, (K if mode == 'ridge' else 1) + 1)}


def tokens_to_next_use(P):  # n[l,t,e]: tokens from t to e's next pick after t (1e9 if none)
    n = np.full(P.shape, 1e9); last = np.full((L, E), 1e9)
    for t in range(P.shape[1] - 1, -1, -1):
        n[:, t] = last - t; last = np.where(P[:, t] > 0, t, last)
    return n


def simulate(k):
    X, P = docs[k]; n_next = tokens_to_next_use(P)
    est = {key: np.clip(with_bias(k, key[0]) @ w, 1e-3, 1) for key, w in W.items()}
    resident = np.zeros((L, E), bool); wait = np.full((L, E), 7.0); count = np.zeros((L, E))
    decay = 0.5 ** (1 / 16); hits = claims = n_resident = 0
    for t in range(P.shape[1]):
        for l in range(L):
            picks = np.nonzero(P[l, t])[0]
            for e in picks:
                claims += 1
                if resident[l, e]: hits += 1; continue
                if n_resident >= SLOTS:
                    d = ((np.arange(L) - l - 1) % L)[:, None] + L * wait
                    d = np.where(resident, d, -1); d[l, picks] = -1
                    resident.flat[np.argmax(d)] = False; n_resident -= 1
                resident[l, e] = True; n_resident += 1
            count[l] *= decay; count[l][picks] += 1
            rate = np.clip(count[l] / count[l].sum() * 8, 1e-3, 1)
            mixed = lambda s: np.clip(MIX * est[(l, s)][t] + (1 - MIX) * rate, 1e-3, 1)
            if mode == 'oracle':  # tokens waited after the next visit
                n = n_next[l, t]; wait[l] = np.where(n <= K, n - 1, (K - 1) + 1 / mixed(1))
            else:
                unused = np.ones(E); expected = np.zeros(E); tail = np.zeros(E)
                for s in range(1, K + 1):
                    p = mixed(s); expected += unused * p * (s - 1); unused *= 1 - p; tail += p / K
                wait[l] = expected + unused * ((K - 1) + 1 / tail)
    return hits / claims


r = [simulate(k) for k in test]
print(mode, K, [round(x, 3) for x in r], round(np.mean(r), 4), flush=True)
