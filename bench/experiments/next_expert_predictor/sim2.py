import numpy as np

from study_data import *

docs = load_documents()
L=8; E=64
train=[k for k in docs if 'train' in k]; test=[k for k in docs if 'test' in k]
def fit(featf):
    W=[]
    for l in range(L):
        A=np.vstack([featf(k,l)[:-1] for k in train]); Y=np.vstack([docs[k][1][l][1:] for k in train])
        G=A.T@A; md=np.mean(np.diag(G)); W.append(np.linalg.solve(G+1e-3*md*np.eye(G.shape[0]),A.T@Y))
    return W
one=lambda k: np.ones((docs[k][0].shape[1],1))
fx=lambda k,l: np.hstack([one(k),docs[k][0][l]])
fxl=lambda k,l: np.hstack([one(k),docs[k][0][l],docs[k][0][L-1]])
def simulate(P, qnext, slots, mix):
    # qnext[l][t]: probability estimate for layer l's units at token t+1's visit, known after layer l of token t
    # (mode 'end': known after the last layer of token t)
    T=P.shape[1]; res=np.zeros((L,E),bool); q=np.full((L,E),0.125); cnt=np.zeros((L,E)); a=0.5**(1/16)
    hits=acc=0; nres=0
    for t in range(T):
        for l in range(L):
            pk=np.nonzero(P[l,t])[0]
            for e in pk:
                acc+=1
                if res[l,e]: hits+=1; continue
                if nres>=slots:
                    d=((np.arange(L)-l-1)%L)[:,None]+L*(1-q)/q
                    d=np.where(res,d,-1); d[l,pk]=-1
                    v=np.argmax(d); res.flat[v]=False; nres-=1
                res[l,e]=True; nres+=1
            cnt[l]*=a; cnt[l][pk]+=1
            c=np.clip(cnt[l]/cnt[l].sum()*8,1e-3,1)
            if qnext is None: q[l]=c
            elif qnext[1]=='layer': q[l]=np.clip(mix*qnext[0][l][t]+(1-mix)*c,1e-3,1)
        if qnext is not None and qnext[1]=='end':
            for l in range(L):
                c=np.clip(cnt[l]/cnt[l].sum()*8,1e-3,1)
                q[l]=np.clip(mix*qnext[0][l][t]+(1-mix)*c,1e-3,1)
    return hits/acc
slots=128
Wx=fit(fx); Wxl=fit(fxl)
for name,W,f,when,mix in (('count',None,None,None,0),('x layer .5',Wx,fx,'layer',.5),('x layer 1',Wx,fx,'layer',1.),('xl end .5',Wxl,fxl,'end',.5),('xl end 1',Wxl,fxl,'end',1.)):
    r=[]
    for k in test:
        P=docs[k][1]
        qn=None if W is None else ([f(k,l)@W[l] for l in range(L)],when)
        r.append(simulate(P,qn,slots,mix))
    print(name,[round(x,3) for x in r],round(np.mean(r),4),flush=True)
