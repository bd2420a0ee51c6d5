"""Goal 1: items_per_second with cost counters on / off, per row: median of each side's
processes, and the median of the per-round paired ratios."""
import glob, json, os, statistics as st, sys
E = os.path.dirname(os.path.abspath(__file__))
def load(side):
    out = {}
    for f in sorted(glob.glob(f"{E}/{side}-*.json")):
        rnd = int(f.rsplit("-", 1)[1].split(".")[0])
        for b in json.load(open(f))["benchmarks"]:
            if b.get("error_occurred"): continue
            out.setdefault(b["run_name"], {})[rnd] = b["items_per_second"]
    return out
on, off = load("on"), load("off")
print(f"{'row':100} n  on_median   off_median  on/off  paired_median [min,max]")
for name in on:
    a, b = on[name], off.get(name, {})
    rounds = sorted(set(a) & set(b))
    pr = [a[r] / b[r] for r in rounds]
    print(f"{name.replace('/real_time',''):100} {len(rounds)} {st.median(a.values()):10.0f} {st.median(b.values()):10.0f}  "
          f"{st.median(a.values())/st.median(b.values()):.3f}  {st.median(pr):.3f} [{min(pr):.3f},{max(pr):.3f}]")
