import json, glob, statistics as st, sys
groups = [("SGHMC", "sghmc-s*"), ("SGLD", "sgld-s*"), ("SGD (λ = 1)", "sgd-wd1-s*"), ("SGD-momentum (λ = 0.1)", "sgdm-wd0.1-s*")]
base = sys.argv[1]
print("| method | test error (%) | test NLL | val error (%) | seeds | wall per run (s) |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for label, pat in groups:
    ss = [json.load(open(f)) for f in sorted(glob.glob(f"{base}/{pat}/summary.json"))]
    if not ss: continue
    def ms(k, scale=1):
        v = [s[k] * scale for s in ss]
        return f"{st.mean(v):.2f} ± {st.stdev(v):.2f}" if len(v) > 1 else f"{v[0]:.2f}"
    def ms4(k):
        v = [s[k] for s in ss]
        return f"{st.mean(v):.4f} ± {st.stdev(v):.4f}" if len(v) > 1 else f"{v[0]:.4f}"
    print(f"| {label} | {ms('test_error', 100)} | {ms4('test_nll')} | {ms('val_error', 100)} | {len(ss)} | {st.mean(s['wall_seconds'] for s in ss):.0f} |")
print()
print("Weight decay on the validation split (seed 1, val error % / test error %):")
print()
print("| λ | SGD | SGD-momentum |")
print("| ---: | ---: | ---: |")
for wd in ["0.1", "1", "10", "100"]:
    row = []
    for m in ["sgd", "sgdm"]:
        s = json.load(open(f"{base}/{m}-wd{wd}-s1/summary.json"))
        row.append(f"{100*s['val_error']:.2f} / {100*s['test_error']:.2f}")
    print(f"| {wd} | {row[0]} | {row[1]} |")
