"""Formulations of the GPT step's matrix products and gather gradient (issue 22):
np.matmul, one large GEMM by reshaping, scipy.linalg.blas, einsum; np.add.at,
bincount per column, sorted ids with np.add.reduceat. Prints the minimum of 30
calls of each (ms); the table in docs/benchmarks.md came from this script.

Usage: ``python bench/matmul_forms.py`` (needs scipy).
"""
import time

import numpy as np
from scipy.linalg import blas
rng = np.random.default_rng(0)
def t(f, n=30):
    f(); ts=[]
    for _ in range(n):
        s=time.perf_counter(); f(); ts.append(time.perf_counter()-s)
    return min(ts)*1e3
B,T,C,N = 32,64,64,256
x = rng.standard_normal((B,T,C)).astype(np.float32); w = rng.standard_normal((C,N)).astype(np.float32)
g = rng.standard_normal((B,T,N)).astype(np.float32)
print("forward x@W [32,64,64]@[64,256]")
print("  np.matmul 3D@2D  %.3f ms" % t(lambda: np.matmul(x, w)))
print("  reshape one GEMM %.3f ms" % t(lambda: np.matmul(x.reshape(-1,C), w).reshape(B,T,N)))
print("  scipy sgemm      %.3f ms" % t(lambda: blas.sgemm(1.0, x.reshape(-1,C), w)))
print("  bits equal:", np.array_equal(np.matmul(x,w), np.matmul(x.reshape(-1,C), w).reshape(B,T,N)))
print("weight gradient x^T g summed over batch -> [64,256]")
print("  batched matmul + reduce_sum (tfc today) %.3f ms" % t(lambda: np.add.reduce(np.matmul(np.swapaxes(x,-1,-2), g), axis=0)))
print("  one GEMM x2d.T @ g2d                    %.3f ms" % t(lambda: np.matmul(x.reshape(-1,C).T, g.reshape(-1,N))))
print("  scipy sgemm trans_a                     %.3f ms" % t(lambda: blas.sgemm(1.0, x.reshape(-1,C), g.reshape(-1,N), trans_a=1)))
a = np.add.reduce(np.matmul(np.swapaxes(x,-1,-2), g), axis=0); b = x.reshape(-1,C).T @ g.reshape(-1,N)
print("  max rel diff", np.abs(a-b).max()/np.abs(b).max())
H,D = 2,32
q = rng.standard_normal((B,H,T,D)).astype(np.float32); k = rng.standard_normal((B,H,T,D)).astype(np.float32)
print("attention scores q@k^T [32,2,64,32]")
print("  np.matmul swapaxes  %.3f ms" % t(lambda: np.matmul(q, np.swapaxes(k,-1,-2))))
print("  einsum              %.3f ms" % t(lambda: np.einsum('bhtd,bhsd->bhts', q, k)))
def loop():
    out = np.empty((B,H,T,T), np.float32)
    q2=q.reshape(-1,T,D); k2=k.reshape(-1,T,D); o2=out.reshape(-1,T,T)
    for i in range(B*H): o2[i] = blas.sgemm(1.0, q2[i], k2[i], trans_b=1)
    return out
print("  scipy sgemm per batch %.3f ms" % t(loop))
# gather grad
idx = rng.integers(0, 65, (B,T)).astype(np.int32); gg = rng.standard_normal((B*T, C)).astype(np.float32)
def addat():
    o = np.zeros((65, C), np.float32); np.add.at(o, idx.ravel(), gg); return o
def bincount():
    fl = idx.ravel()
    return np.stack([np.bincount(fl, weights=gg[:,j], minlength=65) for j in range(C)], axis=1).astype(np.float32)
def sorted_reduceat():
    fl = idx.ravel(); order = np.argsort(fl, kind='stable'); s = fl[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    o = np.zeros((65, C), np.float32); o[s[starts]] = np.add.reduceat(gg[order], starts, axis=0); return o
print("gather gradient: [2048,64] rows into 65 ids")
print("  np.add.at       %.3f ms" % t(addat))
print("  bincount/column %.3f ms" % t(bincount))
print("  sort + reduceat %.3f ms" % t(sorted_reduceat))
print("  add.at == sorted:", np.array_equal(addat(), sorted_reduceat()), " bincount maxdiff", np.abs(addat()-bincount()).max())
