"""Sanity RMSEs of the peers alone on the real data: python benchmarks/peers/peers_sanity.py (~30 s)."""
import sys; import os; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np, time
from peers_intervals import *
from peers_rectangles import *
from workloads import *
d=np.load(data_file('flights-2001h1.npz'))
v=d['minute']; dom=(0,260640)
print("1-D flights minutes n=3e6, 10^4 queries; RMSE")
for kind in ('uniform','data'):
    lo,hi=random_intervals(10000,dom,kind=kind,values=v,seed=1); true=interval_counts(v,lo,hi)
    sc=np.uint64((2**64-1)//260640)
    for eps in (0.1,1.0):
        row=[kind,eps]
        for b in (2,16): row.append(rmse_from_variances(expected_squared_error(lo,hi,dom,b,eps)))
        for b in (2,16): row.append(rmse_from_variances(expected_squared_error(lo.astype(np.uint64)*sc,hi.astype(np.uint64)*sc,(0,2**64-1),b,eps)))
        a=opendp_interval_answers(v,dom,eps,lo,hi); row.append(np.sqrt(np.mean((a-true)**2)))
        a=opendp_interval_answers(v.astype(np.uint64)*sc,(0,2**64-1),eps,lo.astype(np.uint64)*sc,hi.astype(np.uint64)*sc); row.append(np.sqrt(np.mean((a-true)**2)))
        print("  %-7s eps=%-4s HH2=%.1f HH16=%.1f | D=2^64: HH2=%.1f HH16=%.1f | OpenDP=%.1f OpenDP(2^64)=%.1f"%tuple(row))
def rect(name, pts, dom):
    print(name, pts.shape)
    for kind in ('uniform','data'):
        lo,hi=random_rectangles(10000,dom,kind=kind,points=pts,seed=2); true=RectangleCounter(pts).count(lo,hi)
        for eps in (0.1,1.0):
            out=[]
            for lab,f in (('UG',lambda: UniformGrid(pts,dom,eps,seed=0)),('UG_trueN',lambda: UniformGrid(pts,dom,eps,n_share=0,seed=0)),('AG',lambda: AdaptiveGrid(pts,dom,eps,seed=0)),('flat64',lambda: FlatHistogram(pts,dom,eps,64 if pts.shape[1]==2 else 16,seed=0))):
                t=time.time(); M=f(); a=M.answer(lo,hi); out.append("%s=%.1f(%d cells,%.1fs)"%(lab,np.sqrt(np.mean((a-true)**2)),M.num_cells,time.time()-t))
            print("  %-7s eps=%-4s "%(kind,eps)+" ".join(out))
z=np.load(data_file('zipcodes.npz')); zp=np.stack([z['latitude_e6'],z['longitude_e6']],1)
rect('zipcodes', zp, [(int(zp[:,k].min()),int(zp[:,k].max())) for k in range(2)])
p2=np.stack([d['minute'],d['distance']],1)[:1000000]
rect('flights (minute,distance) 1e6', p2, [(0,260640),(0,5000)])
p3=np.stack([d['minute'],d['distance'],d['delay']],1)[:1000000]
rect('flights (minute,distance,delay) 1e6', p3, [(0,260640),(0,5000),(-1200,1700)])
