#!/usr/bin/env python3
"""Compare oracle (KAI) and Gantry per-action decision dumps.
Levels per action: exact (same pod/kind/node lines), jobs (same solved jobs, same victim pods, same
moved pods; nodes may differ), differ. Reports the first action that is not exact and the first that
differs at job level."""
import sys, re
def parse(p):
    res, cur, order = {}, None, []
    for l in open(p):
        l = l.rstrip("\n")
        m = re.match(r"== after (\S+)", l)
        if m: cur = m.group(1); res[cur] = set(); order.append(cur); continue
        if cur and l and not l.startswith(("CHECK", "RESULT")): res[cur].add(l)
    return order, res
def job(pod): return pod.rsplit("-", 1)[0]
def summary(lines):
    placed, victims, moved = set(), set(), set()
    for l in lines:
        pod, kind, node = (l.split() + [""])[:3]
        if kind == "evict": victims.add(pod)
        elif kind in ("bind", "pipelined"):
            (moved if pod.startswith("run-") else placed).add(job(pod) if not pod.startswith("run-") else pod)
    return placed, victims, moved
ko, k = parse(sys.argv[1]); go, g = parse(sys.argv[2])
verbose = len(sys.argv) > 3
first_exact = first_job = None
for a in ko:
    if first_exact is None and k[a] != g.get(a): first_exact = a
    if first_job is None and summary(k[a]) != summary(g.get(a, set())): first_job = a
last = ko[-1]
if first_exact is None:
    print(f"EXACT {len(k[last])}")
    sys.exit(0)
kp, kv, km = summary(k[last]); gp, gv, gm = summary(g[last])
print(f"NOTEXACT first={first_exact} joblevel_first={first_job or '-'} | final kai: {len(kp)} jobs placed, {len(kv)} victims, {len(km)} moved | gantry: {len(gp)} placed, {len(gv)} victims, {len(gm)} moved")
if verbose:
    for a in ko:
        kp, kv, km = summary(k[a]); gp, gv, gm = summary(g.get(a, set()))
        print(f" {a}: placed kai-only {sorted(kp-gp)} gantry-only {sorted(gp-kp)}")
        print(f" {a}: victims kai-only {sorted(kv-gv)} gantry-only {sorted(gv-kv)}")
        print(f" {a}: moved kai-only {sorted(km-gm)} gantry-only {sorted(gm-km)}")
sys.exit(1)
