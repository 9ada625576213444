import numpy as np, warnings, time
from sklearn import linear_model as lm
from sklearn.model_selection import KFold, StratifiedKFold
import daskglm
rng=np.random.default_rng(0)
n,d=300,6
X=rng.normal(size=(n,d)); X[:,1]=X[:,1]*3+2
y=X@rng.normal(size=d)+rng.normal(size=n)*2
cv=KFold(4)
alphas=np.logspace(-2,3,12)
t=time.time()
ours=daskglm.RidgeCV(alphas=alphas, cv=cv).fit(X,y)
sk=lm.RidgeCV(alphas=alphas, cv=cv).fit(X,y)
print("ridge", ours.alpha_, sk.alpha_, np.abs(ours.coef_-sk.coef_).max(), ours.best_score_, sk.best_score_, [r.kind for r in ours.comm_.records], time.time()-t)
t=time.time()
a2=np.logspace(-3,0,10)
ours=daskglm.LassoCV(alphas=a2, cv=cv, tol=1e-8).fit(X,y)
sk=lm.LassoCV(alphas=a2, cv=cv, tol=1e-10, max_iter=100000).fit(X,y)
print("lasso", ours.alpha_, sk.alpha_, np.abs(ours.coef_-sk.coef_).max(), np.abs(ours.mse_path_-sk.mse_path_).max(), time.time()-t, len(ours.comm_.records))
ours=daskglm.LassoCV(alphas=20, cv=cv, tol=1e-8).fit(X,y)
sk=lm.LassoCV(alphas=20, cv=cv, tol=1e-10, max_iter=100000).fit(X,y)
print("lasso grid", np.abs(ours.alphas_-sk.alphas_).max(), ours.alpha_, sk.alpha_, np.abs(ours.coef_-sk.coef_).max())
ours=daskglm.ElasticNetCV(l1_ratio=[0.2,0.7], alphas=10, cv=cv, tol=1e-8).fit(X,y)
sk=lm.ElasticNetCV(l1_ratio=[0.2,0.7], alphas=10, cv=cv, tol=1e-10, max_iter=100000).fit(X,y)
print("enet", ours.alpha_, sk.alpha_, ours.l1_ratio_, sk.l1_ratio_, np.abs(ours.coef_-sk.coef_).max(), np.abs(ours.mse_path_-sk.mse_path_).max())
yc=np.array(list("abc"))[np.argmax(X[:,:3]+rng.normal(size=(n,3)),axis=1)]
t=time.time()
Cs=np.logspace(-3,2,8)
ours=daskglm.LogisticRegressionCV(Cs=Cs, cv=StratifiedKFold(4), scoring="neg_log_loss", tol=1e-8).fit(X,yc)
sk=lm.LogisticRegressionCV(Cs=Cs, cv=StratifiedKFold(4), scoring="neg_log_loss", tol=1e-10, max_iter=10000, l1_ratios=None, use_legacy_attributes=True).fit(X,yc)
print("logcv", ours.C_, sk.C_, np.abs(ours.coef_-sk.coef_).max(), np.abs(ours.scores_["a"]-sk.scores_["a"]).max(), time.time()-t)
