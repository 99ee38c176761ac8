#!/usr/bin/python3
"""Literal CPU emulation of the index logic of CUDA launches of the fused MLP pass:
forward_head_kernel (src/kernels/cuda_mlp/mlp_forward_head_cuda.cu: the product part), weight_grad_kernel
(src/kernels/cuda_mlp/weight_grad_cuda.cu: the tiles and the ones column), and the chains' shared minibatch in
mlp_fused_cuda.cu (head_kernel's offsets with head_rows' row stride, the last launch's strided operands).

Every block, thread, chunk load, shared-memory store, per-warp 4 x 4 lane read, warp reduction and output
write is replayed with the kernels' own index expressions, in float64, and the outputs are compared with
numpy's products: a wrong offset, mask or stride shows as a large error or as a read of an element no thread
staged (NaN). Arithmetic order is not emulated (the CPU references, tests/test_mlp_forward_head.cpp and
tests/test_weight_grad.cpp, pin that). Keep the constants and expressions in step with the kernels.

Usage: /usr/bin/python3 scripts/emulate_tiles.py   (~2 minutes: App. H.1's shapes and odd ones)
"""
import numpy as np

WARPS, THREADS, CHUNK = 8, 256, 128
PER_WARP = CHUNK // WARPS


def staged_chunks(chunks, load, store, fma):
    """Both tiled kernels' chunk loop: chunk 0 loaded and stored by every thread, then per chunk the next
    chunk's loads in flight, each thread's FMAs over the staged chunk (fma(tid, acc[tid])), then the next chunk
    stored. Returns acc [THREADS, 4, 4]; a lane that read an element no thread staged shows as NaN."""
    bufs = [load(0, t) for t in range(THREADS)]
    for t in range(THREADS):
        store(bufs[t], t)
    acc = np.zeros((THREADS, 4, 4))
    for c in range(chunks):
        if c + 1 < chunks:
            bufs = [load(c + 1, t) for t in range(THREADS)]
        for tid in range(THREADS):
            fma(tid, acc[tid])
        if c + 1 < chunks:
            for t in range(THREADS):
                store(bufs[t], t)
    assert not np.isnan(acc).any(), "a lane read an element no thread staged"
    return acc

def warp_order_sums(acc, tile, place):
    """The warps' partial tiles stored to shared memory (lane lr, lc's output i, j at place(lr, lc, i, j) of
    its warp's tile of `tile` elements) and added in warp order: the tile's outputs, in order."""
    red = np.full(WARPS * tile, np.nan)
    for tid in range(THREADS):
        warp, lane = divmod(tid, 32)
        lr, lc = divmod(lane, 8)
        for i in range(4):
            for j in range(4):
                red[warp * tile + place(lr, lc, i, j)] = acc[tid, i, j]
    return [sum(red[w * tile + o] for w in range(WARPS)) for o in range(tile)]

def forward(n, k, hdim, seed=0):
    """z = a W^T + b as forward_head_kernel tiles it (16 rows x 32 units, k chunks staged with stride 132)."""
    rows, units, stride = 16, 32, CHUNK + 4
    step = THREADS // CHUNK
    a_rows, w_rows = rows // step, units // step
    rng = np.random.default_rng(seed)
    a, w, b = rng.random((n, k)), rng.standard_normal((hdim, k)), rng.standard_normal(hdim)
    af, wf = a.ravel(), w.ravel()
    h = np.full(n * hdim, np.nan)
    slices, groups, chunks = -(-hdim // units), -(-n // rows), -(-k // CHUNK)
    for blk in range(groups * slices):
        r0, u0 = (blk // slices) * rows, (blk % slices) * units
        sm = np.full((rows + units) * stride, np.nan)

        def load(c, tid):
            col, row0 = tid % CHUNK, tid // CHUNK
            inside = c * CHUNK + col < k
            buf = [af[(r0 + row0) * k + col + c * CHUNK + q * step * k]
                   if inside and r0 + row0 + step * q < n else 0.0 for q in range(a_rows)]
            buf += [wf[(u0 + row0) * k + col + c * CHUNK + q * step * k]
                    if inside and u0 + row0 + step * q < hdim else 0.0 for q in range(w_rows)]
            return buf

        def store(buf, tid):
            col, row0 = tid % CHUNK, tid // CHUNK
            for q in range(a_rows):
                sm[(row0 + step * q) * stride + col] = buf[q]
            for q in range(w_rows):
                sm[(rows + row0 + step * q) * stride + col] = buf[a_rows + q]

        def fma(tid, acc):
            warp, lane = divmod(tid, 32)
            lr, lc = divmod(lane, 8)
            arow, wrow = lr * stride + warp * PER_WARP, (rows + lc) * stride + warp * PER_WARP
            for kk in range(0, PER_WARP, 4):
                av = [sm[arow + 4 * i * stride + kk:arow + 4 * i * stride + kk + 4] for i in range(4)]
                wv = [sm[wrow + 8 * j * stride + kk:wrow + 8 * j * stride + kk + 4] for j in range(4)]
                for i in range(4):
                    for j in range(4):
                        acc[i, j] += av[i] @ wv[j]
        acc = staged_chunks(chunks, load, store, fma)
        zs = warp_order_sums(acc, rows * units, lambda lr, lc, i, j: (lr + 4 * i) * units + lc + 8 * j)
        for o, z in enumerate(zs):
            r, u = r0 + o // units, u0 + o % units
            if r < n and u < hdim:
                h[r * hdim + u] = z + b[u]
    return np.abs(h - (a @ w.T + b).ravel()).max()


def backward(r, m, n, seed=0):
    """C = A^T B and e = column sums of A (the ones column) as weight_grad_kernel tiles them (16 x 32)."""
    tm, tn = 16, 32
    a_per, b_per = THREADS // tm, THREADS // tn
    a_loads, b_loads = CHUNK // a_per, CHUNK // b_per
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((r, m)), rng.standard_normal((r, n))
    af, bf = A.ravel(), B.ravel()
    C, E = np.full(m * n, np.nan), np.full(m, np.nan)
    tiles_n, tiles_m, chunks = -(-(n + 1) // tn), -(-m // tm), -(-r // CHUNK)
    for blk in range(tiles_m * tiles_n):
        m0, n0 = (blk // tiles_n) * tm, (blk % tiles_n) * tn
        As, Bs = np.full(CHUNK * tm, np.nan), np.full(CHUNK * tn, np.nan)

        def load(c, tid):
            acol, arow, bcol, brow = tid % tm, tid // tm, tid % tn, tid // tn
            one = n0 + bcol == n
            aok, bok = m0 + acol < m, n0 + bcol < n or one
            r0 = c * CHUNK
            ab = [af[arow * m + m0 + acol + (r0 + a_per * q) * m] if aok and r0 + arow + a_per * q < r else 0.0
                  for q in range(a_loads)]
            bb = [(1.0 if one else bf[brow * n + n0 + bcol + (r0 + b_per * q) * n])
                  if bok and r0 + brow + b_per * q < r else 0.0 for q in range(b_loads)]
            return ab, bb

        def store(buf, tid):
            acol, arow, bcol, brow = tid % tm, tid // tm, tid % tn, tid // tn
            for q in range(a_loads):
                As[(arow + a_per * q) * tm + acol] = buf[0][q]
            for q in range(b_loads):
                Bs[(brow + b_per * q) * tn + bcol] = buf[1][q]

        def fma(tid, acc):
            warp, lane = divmod(tid, 32)
            lr, lc = divmod(lane, 8)
            ar, br = warp * PER_WARP * tm + 4 * lr, warp * PER_WARP * tn + 4 * lc
            for rr in range(PER_WARP):
                acc += np.outer(As[ar + rr * tm:ar + rr * tm + 4], Bs[br + rr * tn:br + rr * tn + 4])
        acc = staged_chunks(chunks, load, store, fma)
        zs = warp_order_sums(acc, tm * tn, lambda lr, lc, i, j: (4 * lr + i) * tn + 4 * lc + j)
        for o, z in enumerate(zs):
            i, j = m0 + o // tn, n0 + o % tn
            if i < m and j < n:
                C[i * n + j] = z
            elif i < m and j == n:
                E[i] = z
    return max(np.abs(C - (A.T @ B).ravel()).max(), np.abs(E - A.sum(0)).max())


def shared_chains(chains, n, k, hdim, outs, rows_per_block, seed=0):
    """The chains' shared minibatch (mlp_fused_cuda.cu run() with `shared`): P = x [W_0 of every chain]^T as
    [n, C*hdim]; head_kernel per (row block, chain) with head_rows' row_at; then the last launch's two
    problems per chain (the output layer's dW, db against h_1; the hidden layer's db by the ones column
    against g_1) with their strides, and dW_0 of every chain = g_1^T x. Sigmoid; the max error against a
    per-chain numpy backward."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, k)), rng.integers(0, outs, n)
    w0, b0 = rng.standard_normal((chains, hdim, k)) / 8, rng.standard_normal((chains, hdim))
    w1, b1 = rng.standard_normal((chains, outs, hdim)), rng.standard_normal((chains, outs))
    sig = lambda v: 1 / (1 + np.exp(-v))
    pre = (x @ w0.reshape(chains * hdim, k).T).ravel()  # [n, C*hdim], one product
    h_out, d = np.full(n * chains * hdim, np.nan), np.full(n * chains * hdim, np.nan)
    g_l, row_nll = np.full(chains * n * outs, np.nan), np.full(chains * n, np.nan)
    for chain in range(chains):  # blockIdx.y
        hid_cs, rs = hdim, chains * hdim  # head_kernel: shared
        for r0 in range(0, n, rows_per_block):  # blockIdx.x * rows_per_block
            rows = min(rows_per_block, n - r0)

            def row_at(i):
                return r0 * hdim + i if rs == hdim else (r0 + i // hdim) * rs + i % hdim
            hs = np.empty(rows * hdim)
            for i in range(rows * hdim):
                at = row_at(i)
                v = sig(pre[chain * hid_cs + at] + b0.ravel()[chain * hdim + i % hdim])
                h_out[chain * hid_cs + at] = hs[i] = v
            for r in range(rows):
                f = w1[chain] @ hs[r * hdim:(r + 1) * hdim] + b1[chain]
                p = np.exp(f - f.max())
                p /= p.sum()
                yi = y[r0 + r]  # shared: y not offset by the chain
                row_nll[chain * n + r0 + r] = -np.log(p[yi])
                p[yi] -= 1
                g_l[chain * n * outs + (r0 + r) * outs:chain * n * outs + (r0 + r + 1) * outs] = p
            gs = g_l[chain * n * outs + r0 * outs:chain * n * outs + (r0 + rows) * outs].reshape(rows, outs)
            for i in range(rows * hdim):
                r, j = i // hdim, i % hdim
                d[chain * hid_cs + row_at(i)] = (gs[r] @ w1[chain][:, j]) * hs[i] * (1 - hs[i])

    def gemm(a, a_rs, a_cs, a_bs, b, b_rs, b_cs, b_bs, m, cols, kk, chain):
        """C(m, j) = sum_k A(m, k) B(k, j), A(m, k) = a[chain a_bs + m a_rs + k a_cs]; the ones column."""
        mi, ki = np.arange(m)[:, None], np.arange(kk)[None, :]
        A = a[chain * a_bs + mi * a_rs + ki * a_cs]
        B = b[chain * b_bs + np.arange(kk)[:, None] * b_rs + np.arange(cols)[None, :] * b_cs] if cols else None
        return (A @ B if cols else None), A.sum(1)
    dw0 = (d.reshape(n, chains * hdim).T @ x).reshape(chains, hdim, k)  # one product
    err = 0.0
    for chain in range(chains):
        # the output layer: a = g_L chain-major (a_rs 1, a_cs outs, a_bs n outs); b = h_1 (b_rs C hdim, b_bs hdim)
        dw1, db1 = gemm(g_l, 1, outs, n * outs, h_out, chains * hdim, 1, hdim, outs, hdim, n, chain)
        # the hidden layer's bias: a = g_1 (a_rs 1, a_cs C hdim, a_bs hdim), the ones column alone
        _, db0 = gemm(d, 1, chains * hdim, hdim, None, 0, 0, 0, hdim, 0, n, chain)
        a = sig(x @ w0[chain].T + b0[chain])
        f = a @ w1[chain].T + b1[chain]
        p = np.exp(f - f.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        nll = -np.log(p[np.arange(n), y]).sum()
        p[np.arange(n), y] -= 1
        g1 = (p @ w1[chain]) * a * (1 - a)
        for got, want in [(dw0[chain], g1.T @ x), (db0, g1.sum(0)), (dw1, p.T @ a), (db1, p.sum(0)),
                          (row_nll[chain * n:(chain + 1) * n].sum(), nll)]:
            err = max(err, float(np.max(np.abs(got - want))))
    return err

if __name__ == "__main__":
    for shape in [(5, 3, 33), (70, 300, 45), (37, 144, 1), (500, 784, 100)]:
        err = forward(*shape)
        print("forward  n, k, hdim =", shape, "max error", err)
        assert err < 1e-9
    for shape in [(5, 3, 7), (300, 45, 64), (129, 17, 33), (500, 10, 100), (500, 100, 784)]:
        err = backward(*shape)
        print("backward r, m, n =", shape, "max error", err)
        assert err < 1e-9
    for shape in [(3, 7, 5, 4, 3, 1), (3, 7, 5, 4, 3, 3), (5, 64, 50, 24, 10, 8), (2, 500, 784, 100, 10, 1)]:
        err = shared_chains(*shape)
        print("shared chains C, n, k, hdim, outs, rows per block =", shape, "max error", err)
        assert err < 1e-9
    print("index logic: ok")
