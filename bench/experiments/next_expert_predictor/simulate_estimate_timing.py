"""Which hidden state, and when: simulate_policies.py's arena with q from a ridge map of x_l(t)
known after layer l (`layer`), or of x_l(t) and the last layer's input known after the token
(`end`)."""
import numpy as np

from study_data import *

docs = load_documents()
L = 8
train = [k for k in docs if 'train' in k]; test = [k for k in docs if 'test' in k]
one = lambda k: np.ones((docs[k][0].shape[1], 1))
fx = lambda k, l: np.hstack([one(k), docs[k][0][l]])
fxl = lambda k, l: np.hstack([one(k), docs[k][0][l], docs[k][0][L - 1]])


def fit(features):
    W = []
    for l in range(L):
        A = np.vstack([features(k, l)[:-1] for k in train])
        Y = np.vstack([docs[k][1][l][1:] for k in train])
        W.append(ridge(A, Y))
    return W


Wx = fit(fx); Wxl = fit(fxl)
for name, W, features, at_end, mix in (('count', None, None, False, 0), ('x layer .5', Wx, fx, False, .5),
                                       ('x layer 1', Wx, fx, False, 1.), ('xl end .5', Wxl, fxl, True, .5),
                                       ('xl end 1', Wxl, fxl, True, 1.)):
    r = []
    for k in test:
        est = None if W is None else {(l, 1): features(k, l) @ W[l] for l in range(L)}
        r.append(simulate_arena(docs[k][1], est, at_token_end=at_end, mix=mix)[0])
    print(name, [round(x, 3) for x in r], round(np.mean(r), 4), flush=True)
