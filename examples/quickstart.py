"""A first tour of rill: tensors of several dtypes, ops, views, reductions and matmul."""
import numpy as np

import rill

rill.manual_seed(0)

print("== the example from the README")
a = rill.tensor([[1, 2], [3, 4]], dtype=rill.float32)
b = rill.arange(4).reshape(2, 2)          # int64
c = (a + b).relu().sum(dim=1, keepdim=True)
print(c, c.dtype, c.shape, c.numpy())

print("\n== dtypes and promotion")
for dt in (rill.bool, rill.uint8, rill.int32, rill.int64, rill.float16, rill.bfloat16, rill.float64):
    t = rill.ones(2, 3, dtype=dt)
    print(f"{str(dt):15s} {t.shape}  (t + 1).dtype = {(t + 1).dtype}  (t / 2).dtype = {(t / 2).dtype}")
print("int64 tensor + 2.5 ->", (b + 2.5).dtype, "| int32 + int64 ->", rill.promote_types(rill.int32, rill.int64))

print("\n== views share storage")
x = rill.arange(12, dtype=rill.float32).reshape(3, 4)
print(x)
print("x.T:", x.T.shape, "strides", x.T.stride(), "contiguous:", x.T.is_contiguous())
print("x[1:, ::2]:", x[1:, ::2])
x[0, :] = -1.0
print("after x[0, :] = -1:", x[0])

print("\n== elementwise and comparisons")
v = rill.randn(5)
print("v        ", v)
print("v.exp()  ", v.exp())
print("v > 0    ", v > 0)
print("where    ", rill.where(v > 0, v, rill.zeros(5)))

print("\n== reductions")
m = rill.rand(4, 6)
print("sum", m.sum().item(), "mean", m.mean().item())
values, indices = m.max(dim=1)
print("max over dim 1:", values, indices)
print("argmax:", m.argmax())

print("\n== matmul on OpenBLAS")
w = rill.randn(6, 3)
y = m @ w
ref = m.numpy() @ w.numpy()
print("result", y.shape, "max |rill - numpy| =", float(np.abs(y.numpy() - ref).max()))

print("\n== numpy and DLPack, zero-copy")
arr = np.arange(6, dtype=np.float64).reshape(2, 3)
t = rill.from_numpy(arr)
arr[0, 0] = 100.0
print("from_numpy shares memory:", t[0, 0].item() == 100.0)
print("DLPack round trip:", rill.from_dlpack(t).numpy().tolist())
print("\nallocator:", {k: v for k, v in rill.memory_stats().items() if k in ("allocated_bytes", "num_allocs", "num_cache_hits")})
