"""Regressing the quantity the policy needs: a ridge map from x_l(t) to the log of the tokens
until each expert's next use in layer l (capped), mixed in log space with the decayed count's
geometric expectation, in the study's whole-arena simulation (study_data.simulate_arena).

  simulate_distance_regression.py CAP MIX
      CAP: tokens the distance is capped at; MIX: weight of the fitted map"""
import sys

import numpy as np

from study_data import *

docs = load_documents()
L = 8
train = [k for k in docs if 'train' in k]; test = [k for k in docs if 'test' in k]
cap, mix = float(sys.argv[1]), float(sys.argv[2])


def with_bias(k, l):
    return np.hstack([np.ones((docs[k][0].shape[1], 1)), docs[k][0][l]])


to_next = {k: tokens_to_next_use(docs[k][1]) for k in train}
W = [ridge(np.vstack([with_bias(k, l) for k in train]),
           np.vstack([np.log(np.minimum(to_next[k][l], cap)) for k in train])) for l in range(L)]

r = []
for k in test:
    log_tokens = [with_bias(k, l) @ W[l] for l in range(L)]
    wait_of = lambda l, t, rate: np.exp(mix * log_tokens[l][t] + (1 - mix) * np.log(1 / rate)) - 1
    r.append(simulate_arena(docs[k][1], None, wait_of=wait_of)[0])
print(cap, mix, [round(x, 3) for x in r], round(np.mean(r), 4), flush=True)
