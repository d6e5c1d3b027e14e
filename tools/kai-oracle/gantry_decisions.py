#!/usr/bin/env python3
"""Run Gantry on a scenario with action prefixes; print each changed pod's final state in the oracle's form
(from `gantry cycle --json`'s changed_pods). GANTRY_FLAGS: extra flags for `gantry cycle`."""
import json, subprocess, sys, tempfile, os
GANTRY = os.environ.get("GANTRY", "build/gantry")
FLAGS = os.environ.get("GANTRY_FLAGS", "").split()
ACTIONS = ["allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"]
KIND = {"releasing": "evict", "pipelined": "pipelined", "binding": "bind", "allocated": "bind", "bound": "bind"}
def main():
    path = sys.argv[1]
    acts = sys.argv[2].split(",") if len(sys.argv) > 2 else ACTIONS
    d = json.load(open(path))
    d["config"]["mode"] = "single_session"
    d.pop("expect", None)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(1, len(acts) + 1):
            d["config"]["actions"] = acts[:i]
            f = os.path.join(tmp, "s.json")
            json.dump(d, open(f, "w"))
            r = subprocess.run([GANTRY, "cycle", "--json", f] + FLAGS, capture_output=True, text=True)
            if r.returncode != 0:
                print("gantry failed:", r.stderr, file=sys.stderr); sys.exit(2)
            c = json.loads(r.stdout)[0]
            out = sorted(f"{p['pod']} {KIND.get(p['status'], p['status'])} {p['node']}" for p in c.get("changed_pods", []) or [])
            print(f"== after {acts[i-1]} ({len(out)} decisions)")
            for l in out: print(l)
main()
