"""Prints the PyTorch 2.15 values that tests/ops/dtypes.rs asserts (run with a PyTorch install:
`python tests/ops/dtypes_values.py`): promotion tables, casts, integer and bool arithmetic,
printing, half precision, masks and the arg-reductions."""
import torch
t=torch.tensor
D=[torch.bool,torch.uint8,torch.int32,torch.int64,torch.float16,torch.bfloat16,torch.float32,torch.float64]
# promote_types table
for a in D:
    print(" ".join(str(torch.promote_types(a,b)).replace("torch.","") for b in D))
print("---result_type")
for a in D:
    row=[]
    for b in D:
        x=torch.ones(2,dtype=a); z=torch.ones((),dtype=b)
        row.append(str(torch.result_type(x,z)).replace("torch.",""))
    print(" ".join(row))
print("---scalars")
for a in D:
    x=torch.ones(2,dtype=a)
    print(str(a), str(torch.result_type(x,2)).replace("torch.",""), str(torch.result_type(x,2.5)).replace("torch.",""), str(torch.result_type(x,True)).replace("torch.",""))
print("---casts")
x=t([-1.7,-0.5,0.0,0.5,2.5,300.0,-300.0,65504.0,1e6,float('nan'),float('inf')],dtype=torch.float64)
for d in [torch.int64,torch.int32,torch.uint8,torch.bool,torch.float16,torch.bfloat16,torch.float32]:
    try: print(d, x.to(d).tolist())
    except Exception as e: print(d, "ERR", e)
print(t([1,2,3]).float().div(t([2,2,2])).dtype, (t([1,2,3])/t([2,2,2])).tolist())
print((t([7,-7,7,-7])%t([3,3,-3,-3])).tolist(), torch.fmod(t([7,-7,7,-7]),t([3,3,-3,-3])).tolist())
print((t([True,False])+t([True,True])).tolist())
try: t([True])-t([True])
except Exception as e: print("ERR", e)
try: -t([True])
except Exception as e: print("ERR", e)
print(t([200],dtype=torch.uint8)+t([100],dtype=torch.uint8))
print(t([1,2,3]).sum().dtype, t([True,True]).sum())
print(repr(t([1,-20,3])), repr(t([True,False,True])), repr(t([1,2],dtype=torch.int32)), repr(t([1.5,2],dtype=torch.float16)), repr(t([1.5,2],dtype=torch.bfloat16)), repr(t([[1,2],[3,4]],dtype=torch.uint8)))
print(repr(torch.zeros(0,dtype=torch.int64)), repr(torch.tensor(5)), repr(torch.tensor(True)))
print(t([0.1,2.0],dtype=torch.float16).exp().tolist(), (t([0.1,2.0],dtype=torch.float16)*t([3.0,0.7],dtype=torch.float16)).tolist())
print(t([1,2,3]).exp().dtype, torch.sqrt(t([4,2])).tolist())
try: torch.zeros(2,dtype=torch.long).requires_grad_()
except Exception as e: print("ERR", e)
try: torch.softmax(t([1,2]),0)
except Exception as e: print("ERR", e)
try: torch.where(t([1,0]), t([1.]), t([2.]))
except Exception as e: print("ERR", e)
a=torch.tensor([1.,2.,3.],requires_grad=True); b=torch.tensor([10.,20.,30.],dtype=torch.float64,requires_grad=True)
y=(a*b); print(y.dtype, y.grad_fn.name()); y.sum().backward(); print(a.grad.dtype, a.grad.tolist(), b.grad.dtype, b.grad.tolist())
x=torch.tensor([-1.,2.,-3.],requires_grad=True); m=x>0
r=torch.where(m,x,torch.tensor(0.)); print(r.grad_fn.name()); (r*t([1.,2.,3.])).sum().backward(); print(x.grad.tolist())
x=torch.tensor([-1.,2.,-3.],requires_grad=True); r=x.masked_fill(x<0, 5.0); print(r.grad_fn.name(), r.tolist()); r.sum().backward(); print(x.grad.tolist())
print(t([[0.1,2.0,0.3],[5.,0.,1.]]).argmax(1).tolist(), t([[0.1,2.0,0.3],[5.,0.,1.]]).argmax().tolist(), t([3,1,2,1]).argmin().tolist(), t([1.,float('nan'),3.]).argmax().tolist(), t([1.,float('nan'),0.]).argmin().tolist())
x=t([1,2,3])*2.5; print(x.dtype, x.tolist()); print((t([1,2,3])*2).dtype, (t([True,False])+1).dtype, (t([1.,2.],dtype=torch.float16)+2.5).dtype)
print((torch.ones(2,dtype=torch.float16)+torch.tensor(1.,dtype=torch.float32)).dtype)
h=torch.tensor([[1.0,2.0],[3.0,4.0]],dtype=torch.bfloat16)*0.3; print((h@h).tolist())
print(t([0.1,0.2,0.3],dtype=torch.float16).sum().tolist(), t([0.1]*100,dtype=torch.bfloat16).sum().tolist())
print(t([1,2,3]).lt(2.5).tolist(), (t([1.,float('nan')])!=t([1.,float('nan')])).tolist())
