#!/usr/bin/python3
"""Literal CPU emulation of the index logic of two CUDA launches of the fused MLP pass:
forward_head_kernel (src/kernels/mlp_forward_head_cuda.cu: the product part) and weight_grad_kernel
(src/kernels/weight_grad_cuda.cu: the tiles and the ones column).

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

        bufs = [load(0, t) for t in range(THREADS)]
        for t in range(THREADS):
            store(bufs[t], t)
        acc = np.zeros((THREADS, 4, 4))
        for c in range(chunks):
            if c + 1 < chunks:
                bufs = [load(c + 1, t) for t in range(THREADS)]
            for tid in range(THREADS):
                warp, lane = divmod(tid, 32)
                lr, lc = divmod(lane, 8)
                arow, wrow = lr * stride + warp * PER_WARP, (rows + lc) * stride + warp * PER_WARP
                for kk in range(0, PER_WARP, 4):
                    av = [sm[arow + 4 * i * stride + kk:arow + 4 * i * stride + kk + 4] for i in range(4)]
                    wv = [sm[wrow + 8 * j * stride + kk:wrow + 8 * j * stride + kk + 4] for j in range(4)]
                    for i in range(4):
                        for j in range(4):
                            acc[tid, i, j] += av[i] @ wv[j]
            if c + 1 < chunks:
                for t in range(THREADS):
                    store(bufs[t], t)
        assert not np.isnan(acc).any(), "a lane read an element no thread staged"
        red = np.full(WARPS * rows * units, np.nan)
        for tid in range(THREADS):
            warp, lane = divmod(tid, 32)
            lr, lc = divmod(lane, 8)
            for i in range(4):
                for j in range(4):
                    red[(warp * rows + lr + 4 * i) * units + lc + 8 * j] = acc[tid, i, j]
        for o in range(rows * units):
            z = sum(red[wp * rows * units + o] for wp in range(WARPS))
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

        bufs = [load(0, t) for t in range(THREADS)]
        for t in range(THREADS):
            store(bufs[t], t)
        acc = np.zeros((THREADS, 4, 4))
        for c in range(chunks):
            if c + 1 < chunks:
                bufs = [load(c + 1, t) for t in range(THREADS)]
            for tid in range(THREADS):
                warp, lane = divmod(tid, 32)
                lr, lc = divmod(lane, 8)
                ar, br = warp * PER_WARP * tm + 4 * lr, warp * PER_WARP * tn + 4 * lc
                for rr in range(PER_WARP):
                    acc[tid] += np.outer(As[ar + rr * tm:ar + rr * tm + 4], Bs[br + rr * tn:br + rr * tn + 4])
            if c + 1 < chunks:
                for t in range(THREADS):
                    store(bufs[t], t)
        assert not np.isnan(acc).any(), "a lane read an element no thread staged"
        red = np.full(WARPS * tm * tn, np.nan)
        for tid in range(THREADS):
            warp, lane = divmod(tid, 32)
            lr, lc = divmod(lane, 8)
            for i in range(4):
                for j in range(4):
                    red[(warp * tm + 4 * lr + i) * tn + 4 * lc + j] = acc[tid, i, j]
        for o in range(tm * tn):
            z = sum(red[w * tm * tn + o] for w in range(WARPS))
            i, j = m0 + o // tn, n0 + o % tn
            if i < m and j < n:
                C[i * n + j] = z
            elif i < m and j == n:
                E[i] = z
    return max(np.abs(C - (A.T @ B).ravel()).max(), np.abs(E - A.sum(0)).max())


if __name__ == "__main__":
    for shape in [(5, 3, 33), (70, 300, 45), (37, 144, 1), (500, 784, 100)]:
        err = forward(*shape)
        print("forward  n, k, hdim =", shape, "max error", err)
        assert err < 1e-9
    for shape in [(5, 3, 7), (300, 45, 64), (129, 17, 33), (500, 10, 100), (500, 100, 784)]:
        err = backward(*shape)
        print("backward r, m, n =", shape, "max error", err)
        assert err < 1e-9
    print("index logic: ok")
