"""H.1's GEMMs (batch 500, 784-100-10) on a CUDA device: each layout and precision, µs per product.

Timed as CUDA-graph replays of 200 products (median of 20 replays), so launch gaps are amortized as
in train.graph. Run on the GPU machine: python3 bench/gemm_shapes_cuda.py
"""
import torch, statistics

dev = "cuda"
torch.manual_seed(0)
B, D, H, K = 500, 784, 100, 10


def timed(fn, reps=100):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    ts = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / reps)
    return statistics.median(ts)


def run(prec):
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    dt = torch.bfloat16 if prec == "bf16" else torch.float32
    X = torch.randn(B, D, device=dev, dtype=dt)
    W1 = torch.randn(H, D, device=dev, dtype=dt)       # [out, in], as nn.Linear
    W1t = W1.t().contiguous()                           # [in, out]
    dH = torch.randn(B, H, device=dev, dtype=dt)
    G1 = torch.empty(H, D, device=dev, dtype=dt)
    G1t = torch.empty(D, H, device=dev, dtype=dt)
    Y = torch.empty(B, H, device=dev, dtype=dt)
    b1 = torch.randn(H, device=dev, dtype=dt)
    W2 = torch.randn(K, H, device=dev, dtype=dt)
    b2 = torch.randn(K, device=dev, dtype=dt)
    dY = torch.randn(B, K, device=dev, dtype=dt)
    Z = torch.empty(B, K, device=dev, dtype=dt)
    G2 = torch.empty(K, H, device=dev, dtype=dt)
    Hd = torch.empty(B, H, device=dev, dtype=dt)

    def step5():  # the five products of an H.1 step, as the MLP runs them
        torch.addmm(b1, X, W1.t(), out=Y)
        torch.addmm(b2, Y, W2.t(), out=Z)
        torch.mm(dY.t(), Y, out=G2)
        torch.mm(dY, W2, out=Hd)
        torch.mm(Hd.t(), X, out=G1)

    def step5_mm():  # the same without the bias in the product
        torch.mm(X, W1.t(), out=Y)
        torch.mm(Y, W2.t(), out=Z)
        torch.mm(dY.t(), Y, out=G2)
        torch.mm(dY, W2, out=Hd)
        torch.mm(Hd.t(), X, out=G1)
    rows = {
        "addmm b1+X@W1^T": lambda: torch.addmm(b1, X, W1.t(), out=Y),
        "addmm b2+Y@W2^T [500,10]": lambda: torch.addmm(b2, Y, W2.t(), out=Z),
        "mm Y@W2^T [500,10]": lambda: torch.mm(Y, W2.t(), out=Z),
        "mm dY^T@Y -> [10,100]": lambda: torch.mm(dY.t(), Y, out=G2),
        "mm dY@W2 -> [500,100]": lambda: torch.mm(dY, W2, out=Hd),
        "five products, addmm": step5,
        "five products, mm": step5_mm,
        "fwd X@W1^T (W1 [100,784])": lambda: torch.mm(X, W1.t(), out=Y),
        "fwd X@W1t (W1t [784,100])": lambda: torch.mm(X, W1t, out=Y),
        "fwd (W1@X^T)^T": lambda: torch.mm(W1, X.t()),
        "grad dH^T@X -> [100,784]": lambda: torch.mm(dH.t(), X, out=G1),
        "grad X^T@dH -> [784,100]": lambda: torch.mm(X.t(), dH, out=G1t),
    }
    for name, fn in rows.items():
        print(f"{prec:5s} {name:32s} {timed(fn):8.2f} us")


print(torch.cuda.get_device_name(0), torch.__version__)
for p in ("fp32", "tf32", "bf16"):
    run(p)
