"""What predicts the next token's experts: the share of token t+1's picks in a layer's top 16,
ranked by decayed counts of past picks (several half-lives) and by ridge maps fitted on counts,
the router input x_l(t), the last layer's input and all layers' inputs."""
import numpy as np

from study_data import *

docs = load_documents()
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
