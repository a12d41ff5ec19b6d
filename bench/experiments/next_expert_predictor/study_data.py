"""The study's data: router inputs dumped by dump.cpp (docs/*.bin), each layer's top-8 picks,
and the proxy every script reports (share of token t+1's picks in a layer's top 16)."""
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


def load_documents():
    """{path: (router inputs [L][T][D], picks [L][T][E] multi-hot)} for docs/*.bin."""
    docs = {}
    for p in sorted(glob.glob('docs/*.bin')):
        R, X = load(p)
        docs[p] = (X, picks_of(R, X))
    return docs
