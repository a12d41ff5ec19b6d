"""The whole-arena simulation (128 slots shared by all layers, evict the largest expected next
use): MIN, and q per unit from decayed counts, from the ridge estimate, and from their mean."""
import numpy as np

from study_data import *

docs = load_documents()
L=8; E=64
train=[k for k in docs if 'train' in k]; test=[k for k in docs if 'test' in k]
W=[]
for l in range(L):
    A=np.vstack([np.hstack([np.ones((docs[k][0].shape[1]-1,1)),docs[k][0][l][:-1]]) for k in train]); Y=np.vstack([docs[k][1][l][1:] for k in train])
    W.append(np.linalg.solve(A.T@A+len(A)/1000*np.eye(A.shape[1]),A.T@Y))
def simulate(P, pred, slots, mode):
    T=P.shape[1]
    seq=[(t,l,np.nonzero(P[l,t])[0]) for t in range(T) for l in range(L)]
    # next use (in access-step index) for Belady
    resident={}  # (l,e)->slot info
    hits=acc=0
    step=0
    cnt=np.zeros((L,E)); q=np.full((L,E),0.1)
    nextuse={}
    if mode=='min':
        # for each step, for each pick: next step index where used
        last={}
        nxt=[None]*len(seq)
        for i in range(len(seq)-1,-1,-1):
            t,l,pk=seq[i]; nxt[i]={e: last.get((l,e),1e18) for e in pk}
            for e in pk: last[(l,e)]=i
    for i,(t,l,pk) in enumerate(seq):
        for e in pk:
            acc+=1
            if (l,e) in resident: hits+=1
            else:
                if len(resident)>=slots:
                    # victim among units not in current pick set of this layer
                    cands=[u for u in resident if not (u[0]==l and u[1] in pk)]
                    if mode=='min':
                        v=max(cands,key=lambda u: resident[u])
                    else:
                        def dist(u):
                            d=(u[0]-l-1)%L
                            qq=max(q[u],1e-3)
                            return d+L*(1-qq)/qq
                        v=max(cands,key=dist)
                    del resident[v]
                resident[(l,e)]=0
            if mode=='min': resident[(l,e)]=nxt[i][e]
        # after layer l of token t: update q for layer l (prediction for next visit)
        cnt[l]*=0.5**(1/16); cnt[l][pk]+=1
        if mode=='count': q[l]=np.clip(cnt[l]/cnt[l].sum()*8*1.0,0,1)
        if mode=='pred': q[l]=np.clip(pred[l][t],0,1)
        if mode=='mix': q[l]=np.clip(0.5*pred[l][t]+0.5*cnt[l]/cnt[l].sum()*8,0,1)
    return hits/acc
for frac in (0.25,):
    slots=int(frac*L*E)
    for mode in ('min','count','pred','mix'):
        r=[]
        for k in test:
            X,P=docs[k]
            pred=[np.hstack([np.ones((X.shape[1],1)),X[l]])@W[l] for l in range(L)]
            r.append(simulate(P,pred,slots,mode))
        print(frac,mode,[round(x,3) for x in r],round(np.mean(r),4),flush=True)
