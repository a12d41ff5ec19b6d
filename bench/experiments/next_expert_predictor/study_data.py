"""The study's data: router inputs dumped by dump_router_inputs.cpp (docs/*.bin), each layer's
top-8 picks, and the proxy every script reports (share of token t+1's picks in a layer's top
16)."""
import glob

import numpy as np

def load(p):
    b=open(p,'rb').read(); T,L,D,E=np.frombuffer(b[:16],np.int32)
    off=16; R=np.frombuffer(b[off:off+4*L*E*D],np.float32).reshape(L,E,D); off+=4*L*E*D
    X=np.frombuffer(b[off:],np.float32).reshape(L,T,D)
    return R,X
K=8; H=16
def picks_of(R,X):
    L=X.shape[0]; out=[]
    for l in range(L):
        lg=X[l]@R[l].T
        P=np.zeros_like(lg); idx=np.argsort(-lg,axis=1)[:,:K]
        np.put_along_axis(P,idx,1.0,axis=1); out.append(P)
    return np.stack(out)  # L,T,E
def decayed(P,hl):
    a=0.5**(1/hl); C=np.zeros_like(P); c=np.zeros(P.shape[-1])
    for t in range(P.shape[0]):
        c=c*a+P[t]; C[t]=c
    return C
def recall(score,P):  # score[t] predicts P[t+1]
    idx=np.argsort(-score[:-1],axis=1)[:,:H]
    hit=np.take_along_axis(P[1:],idx,axis=1).sum()
    return hit/P[1:].sum()


def ridge(A, Y):
    """The ridge map A -> Y, regularized by 1e-3 of the Gram matrix's mean diagonal."""
    G = A.T @ A
    return np.linalg.solve(G + 1e-3 * np.mean(np.diag(G)) * np.eye(G.shape[0]), A.T @ Y)


def load_documents():
    """{path: (router inputs [L][T][D], picks [L][T][E] multi-hot)} for docs/*.bin."""
    docs = {}
    for p in sorted(glob.glob('docs/*.bin')):
        R, X = load(p)
        docs[p] = (X, picks_of(R, X))
    return docs


def tokens_to_next_use(P):
    """n[l,t,e]: tokens from t to e's next pick in layer l after t (1e9 if none)."""
    L, T, E = P.shape
    n = np.full(P.shape, 1e9); last = np.full((L, E), 1e9)
    for t in range(T - 1, -1, -1):
        n[:, t] = last - t; last = np.where(P[:, t] > 0, t, last)
    return n


def simulate_arena(P, est, K=1, oracle=False, at_token_end=False, slots=128, mix=0.5,
                   bypass_places=0, wait_of=None):
    """Hit rate of the study's whole-arena simulation on picks P [L][T][E]: `slots` shared by
    all layers, evict the largest expected next use. After layer l of token t, est[(l, s)][t]
    estimates each expert's use at token t+s (s = 1..K); each is mixed with a decayed count
    (`mix` of the estimate), and the unit's next use is expected at the first of those tokens
    it is used at, or after them at the mean rate. est None: the count alone. oracle: the true
    picks of the next K tokens instead, with est[(l, 1)] setting the rate after them.
    at_token_end: every layer's expectation is updated after the token's last layer instead.
    bypass_places: that many of the slots are kept for units a layer computes without caching
    them, taken by a missed unit expected back later than the victim (the expectation for its
    own layer is known before the layer's experts run). wait_of(l, t, rate): the expected
    tokens after the next visit, replacing the model above. Returns (hit rate, share of claims
    bypassed)."""
    L, T, E = P.shape
    n_next = tokens_to_next_use(P) if oracle else None
    resident = np.zeros((L, E), bool); wait = np.full((L, E), 7.0); count = np.zeros((L, E))
    decay = 0.5 ** (1 / 16); hits = claims = n_resident = bypassed = 0

    def expected_wait(l, t):  # tokens waited after the layer's next visit
        rate = np.clip(count[l] / count[l].sum() * 8, 1e-3, 1)
        if wait_of is not None: return wait_of(l, t, rate)
        if est is None: return (1 - rate) / rate
        mixed = lambda s: np.clip(mix * est[(l, s)][t] + (1 - mix) * rate, 1e-3, 1)
        if oracle:
            n = n_next[l, t]; return np.where(n <= K, n - 1, (K - 1) + 1 / mixed(1))
        unused = np.ones(E); expected = np.zeros(E); tail = np.zeros(E)
        for s in range(1, K + 1):
            p = mixed(s); expected += unused * p * (s - 1); unused *= 1 - p; tail += p / K
        return expected + unused * ((K - 1) + 1 / tail)

    for t in range(T):
        for l in range(L):
            picks = np.nonzero(P[l, t])[0]
            count[l] *= decay; count[l][picks] += 1
            fresh = None if at_token_end else expected_wait(l, t)
            places = bypass_places
            for e in picks:
                claims += 1
                if resident[l, e]: hits += 1; continue
                if n_resident >= slots - bypass_places:
                    d = ((np.arange(L) - l - 1) % L)[:, None] + L * wait
                    d = np.where(resident, d, -1); d[l, picks] = -1
                    victim = np.argmax(d)
                    if places and fresh is not None and L - 1 + L * fresh[e] >= d.flat[victim]:
                        places -= 1; bypassed += 1; continue
                    resident.flat[victim] = False; n_resident -= 1
                resident[l, e] = True; n_resident += 1
            if fresh is not None: wait[l] = fresh
        if at_token_end:
            for l in range(L): wait[l] = expected_wait(l, t)
    return hits / claims, bypassed / claims
