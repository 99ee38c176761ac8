#!/usr/bin/env python3
"""PyTorch-Python reference for the sampler update alone on a flat buffer.

The idiomatic in-place updates a PyTorch user writes (torch.randn_like for the noise):
  sgld:   theta += -lr*g + sqrt(2 lr) * xi
  sghmc:  v = (1-alpha) v - eta g + sqrt(2 alpha eta) xi;  theta += v
  msgnht: p = p - xi*p*h - g*h + sqrt(2 D h) z;  theta += p*h;  xi += (p*p - 1)*h   (Euler, elementwise xi)
  sgd:    theta += -lr*g
Prints one JSON object {sampler: ms_per_step}.
"""
import argparse, json, math, time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", type=int, default=10_000_000)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    P = a.params
    g = torch.randn(P, device=dev) * 0.01
    lr, alpha, h, D = 1e-6, 0.01, 1e-6, 1.0

    def sgld(s):
        s["theta"].add_(g, alpha=-lr).add_(torch.randn_like(g), alpha=math.sqrt(2 * lr))

    def sghmc(s):
        s["v"].mul_(1 - alpha).add_(g, alpha=-lr).add_(torch.randn_like(g), alpha=math.sqrt(2 * alpha * lr))
        s["theta"].add_(s["v"])

    def msgnht(s):
        p, xi = s["v"], s["xi"]
        p.sub_(xi * p * h).add_(g, alpha=-h).add_(torch.randn_like(g), alpha=math.sqrt(2 * D * h))
        s["theta"].add_(p, alpha=h)
        xi.add_((p * p - 1) * h)

    def sgd(s):
        s["theta"].add_(g, alpha=-lr)

    out = {}
    for name, fn in [("sgld", sgld), ("sghmc", sghmc), ("msgnht", msgnht), ("sgd", sgd)]:
        s = {"theta": torch.zeros(P, device=dev), "v": torch.zeros(P, device=dev), "xi": torch.full((P,), D, device=dev)}
        for _ in range(3):
            fn(s)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.steps):
            fn(s)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        out[name] = (time.perf_counter() - t0) / a.steps * 1e3
    print(json.dumps(out))


if __name__ == "__main__":
    main()
