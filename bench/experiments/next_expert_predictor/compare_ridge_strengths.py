"""The ridge map from x_l(t) to the next token's picks at relative ridge strengths 1e-4 .. 1e-1
(the share of token t+1's picks in a layer's top 16)."""
import numpy as np

from study_data import *

docs = load_documents()
L=8
train=[k for k in docs if 'train' in k]; test=[k for k in docs if 'test' in k]
for rel in (1e-4,1e-3,1e-2,1e-1):
  res=[]
  for l in range(L):
    A=np.vstack([np.hstack([docs[k][0][l][:-1],np.ones((docs[k][0].shape[1]-1,1))]) for k in train]); Y=np.vstack([docs[k][1][l][1:] for k in train])
    G=A.T@A; md=np.mean(np.diag(G)[:-1]); I=np.eye(G.shape[0]); I[-1,-1]=0
    W=np.linalg.solve(G+rel*md*I,A.T@Y)
    res.append(np.mean([recall(np.hstack([docs[k][0][l],np.ones((docs[k][0].shape[1],1))])@W,docs[k][1][l]) for k in test]))
  print(rel, round(np.mean(res),4), flush=True)
