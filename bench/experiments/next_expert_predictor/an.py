import numpy as np, glob, sys
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
docs={}
for p in sorted(glob.glob('docs/*.bin')):
    R,X=load(p); docs[p]=(X,picks_of(R,X))
L=next(iter(docs.values()))[0].shape[0]
train=[k for k in docs if 'train' in k]; test=[k for k in docs if 'test' in k]
for hl in (2,4,8,16,32):
    r=np.mean([recall(decayed(docs[k][1][l],hl),docs[k][1][l]) for k in test for l in range(L)])
    print('decayed hl',hl,round(r,4))
def feats(k,l,hl,mode):
    X,P=docs[k]; f=[np.ones((X.shape[1],1))]
    if 'x' in mode: f.append(X[l])
    if 'last' in mode: f.append(X[L-1])
    if 'all' in mode: f+= [X[m] for m in range(L) if m!=l]
    if 'c' in mode: f.append(decayed(P[l],hl)); f.append(P[l])
    return np.hstack(f)
for mode in ('c','x','xc','xlastc','xallc'):
  res=[]
  for l in range(L):
    A=np.vstack([feats(k,l,8,mode)[:-1] for k in train]); Y=np.vstack([docs[k][1][l][1:] for k in train])
    lam=1.0*len(A)/1000
    W=np.linalg.solve(A.T@A+lam*np.eye(A.shape[1]),A.T@Y)
    res.append(np.mean([recall(feats(k,l,8,mode)@W,docs[k][1][l]) for k in test]))
  print(mode,[round(r,3) for r in res],round(np.mean(res),4))
