"""simulate_horizon.py's simulation with estimates from models trained by logistic loss instead
of ridge maps: `simulate_nonlinear_estimates.py logistic K` (a linear map and a sigmoid) or
`simulate_nonlinear_estimates.py mlp K` (one hidden layer of 512 ReLUs), each layer's K heads
trained together with Adam for 8 epochs on the training documents. Sigmoid outputs are probabilities; ridge outputs only approximate them."""
import sys

import numpy as np

from study_data import *

docs = load_documents()
L = 8; E = 64
train = [k for k in docs if 'train' in k]; test = [k for k in docs if 'test' in k]
kind, K = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)


def samples(k, l):  # inputs of token t, picks of t+1 .. t+K side by side
    X, P = docs[k]; T = X.shape[1]
    return X[l][:T - K], np.hstack([P[l][s:T - K + s] for s in range(1, K + 1)])


def train_layer(l):
    A, Y = map(np.vstack, zip(*[samples(k, l) for k in train]))
    A = A.astype(np.float32); Y = Y.astype(np.float32)
    mu = A.mean(0); sd = A.std(0) + 1e-6; A = (A - mu) / sd
    D = A.shape[1]; H = 512; O = Y.shape[1]
    if kind == 'mlp':
        params = [rng.standard_normal((D, H)).astype(np.float32) / np.sqrt(D), np.zeros(H, np.float32),
                  rng.standard_normal((H, O)).astype(np.float32) / np.sqrt(H), np.full(O, np.log(8 / 56), np.float32)]
    else:
        params = [np.zeros((D, O), np.float32), np.full(O, np.log(8 / 56), np.float32)]
    m = [np.zeros_like(p) for p in params]; v = [np.zeros_like(p) for p in params]; step = 0
    for epoch in range(8):
        order = rng.permutation(len(A))
        for s in range(0, len(A), 256):
            b = order[s:s + 256]; x = A[b]; y = Y[b]
            if kind == 'mlp':
                h = x @ params[0] + params[1]; r = np.maximum(h, 0); z = r @ params[2] + params[3]
            else:
                z = x @ params[0] + params[1]
            g = (1 / (1 + np.exp(-z)) - y) / len(b)
            if kind == 'mlp':
                gh = (g @ params[2].T) * (h > 0)
                grads = [x.T @ gh + 1e-4 * params[0], gh.sum(0), r.T @ g + 1e-4 * params[2], g.sum(0)]
            else:
                grads = [x.T @ g + 1e-4 * params[0], g.sum(0)]
            step += 1
            for i, (p, gr) in enumerate(zip(params, grads)):
                m[i] = 0.9 * m[i] + 0.1 * gr; v[i] = 0.999 * v[i] + 0.001 * gr * gr
                p -= 1e-3 * (m[i] / (1 - 0.9 ** step)) / (np.sqrt(v[i] / (1 - 0.999 ** step)) + 1e-8)

    def predict(X):
        x = (X - mu) / sd
        z = (np.maximum(x @ params[0] + params[1], 0) @ params[2] + params[3]) if kind == 'mlp' else x @ params[0] + params[1]
        return 1 / (1 + np.exp(-z))
    return predict


models = [train_layer(l) for l in range(L)]


def estimates(k):
    out = [models[l](docs[k][0][l]) for l in range(L)]
    return {(l, s): np.clip(out[l][:, (s - 1) * E:s * E], 1e-3, 1)
            for l in range(L) for s in range(1, K + 1)}


r = [simulate_arena(docs[k][1], estimates(k), K)[0] for k in test]
print(kind, K, [round(x, 3) for x in r], round(np.mean(r), 4), flush=True)
