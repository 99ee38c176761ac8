#!/usr/bin/env python3
"""A model on paper of one data-parallel SGHMC step on P GPUs (docs/distributed.md).

step(P) = compute(P) + update + allreduce(P)
  compute(P)   = max(floor, FLOPs(global batch) / P / rate)   the minibatch gradient, split over P
  update       = bytes of the SGHMC update / HBM bandwidth      every rank updates every parameter
  allreduce(P) = 2 (P-1)/P * M / link + 2 (P-1) * latency      ring all-reduce of the dense gradient
with M = 4 bytes x parameters, latency 5 us, links of 25 and 100 GB/s. Assumptions (stated, not
measured): 60 TFLOP/s effective on the model's matrix products, 30 us per step at least (a
captured whole-step graph), 3 TB/s HBM, the SGHMC update reading theta, v, grad and writing theta, v
(5 x 4 bytes per parameter) plus its noise.
"""
LAT = 5e-6
RATE = 60e12
FLOOR = 30e-6
HBM = 3e12

MODELS = [
    # name, parameters, FLOPs per step at the global batch
    ("MNIST BNN 784-100-10, batch 500", 79_510, 6 * 79_510 * 500),
    ("CNN 10M params, batch 256 of 32x32 (~0.56 GFLOP fwd/img)", 10_000_000, 3 * 0.56e9 * 256),
    ("BPMF Netflix 480k x 18k, d=30, batch 100k ratings", (480_189 + 17_770) * 30, 6 * 2 * 30 * 100_000),
]


def step_time(params, flops, p, link):
    compute = max(FLOOR, flops / p / RATE)
    update = 6 * 4 * params / HBM
    ar = 0.0 if p == 1 else 2 * (p - 1) / p * 4 * params / link + 2 * (p - 1) * LAT
    return compute, update, ar


def main():
    for name, params, flops in MODELS:
        print(f"\n{name}: {params / 1e6:.2f} M parameters, gradient {4 * params / 1e6:.1f} MB")
        print("| GPUs | compute | update | all-reduce 25 GB/s | step 25 GB/s | speed-up | all-reduce 100 GB/s | step 100 GB/s | speed-up |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        t1 = sum(step_time(params, flops, 1, 25e9))
        for p in (1, 8, 64, 512):
            c, u, a25 = step_time(params, flops, p, 25e9)
            _, _, a100 = step_time(params, flops, p, 100e9)
            s25, s100 = c + u + a25, c + u + a100
            ms = lambda x: f"{x * 1e3:.3f} ms"
            print(f"| {p} | {ms(c)} | {ms(u)} | {ms(a25)} | {ms(s25)} | {t1 / s25:.2f}x | {ms(a100)} | {ms(s100)} | {t1 / s100:.2f}x |")


if __name__ == "__main__":
    main()
