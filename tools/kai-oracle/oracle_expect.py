#!/usr/bin/env python3
"""Turns a scenario and KAI's decisions on it into a conformance case.

usage: oracle_expect.py SCENARIO.json KAI_DECISIONS.txt OUT.json [NAME]

KAI_DECISIONS.txt is what a KAI v0.17 decision oracle printed for the scenario run as one session
(lines `== after <action> ...`, then one line per pod whose status changed: `<pod> bind|pipelined|
evict <node>`; the last block is the session's end). The case runs the dump's actions, in one
session (mode single_session), and every pod of the scenario gets an
expect.tasks entry: its final status and node in KAI's session (binding, pipelined or releasing
for the pods KAI changed, its initial state otherwise) and its requested GPUs. The scenario's own
expectations are replaced; the rest of its config (plugins, session parameters) is kept.
"""
import json
import sys

KIND_STATUS = {"bind": "binding", "pipelined": "pipelined", "evict": "releasing"}


def read_blocks(path):
    """The dump's actions in order and the pods' final states after the last one."""
    blocks, current, actions = [], None, []
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("== after "):
            actions.append(line.split()[2])
            current = {}
            blocks.append(current)
        elif current is not None and line and not line.startswith(("CHECK", "RESULT")):
            pod, kind, node = (line.split() + ["", ""])[:3]
            if kind not in KIND_STATUS:
                sys.exit(f"{path}: unknown decision line: {line!r}")
            current[pod] = (KIND_STATUS[kind], node)
    if not blocks:
        sys.exit(f"{path}: no '== after' block")
    return actions, blocks[-1]


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    scenario_path, decisions_path, out_path = sys.argv[1:4]
    scenario = json.load(open(scenario_path))
    actions, final = read_blocks(decisions_path)
    tasks = {}
    seen = set()
    for job in scenario["jobs"]:
        for task in job["tasks"]:
            name = task["name"]
            seen.add(name)
            status, node = final.get(name, (task.get("state", "pending"), task.get("node", "")))
            entry = {"status": status, "gpus_required": task.get("gpus", 0)}
            if node:
                entry["node"] = node
            tasks[name] = entry
    unknown = sorted(set(final) - seen)
    if unknown:
        sys.exit(f"{decisions_path}: pods not in the scenario: {unknown[:5]}")
    scenario["expect"] = {"tasks": tasks}
    scenario["config"]["mode"] = "single_session"
    scenario["config"]["actions"] = actions
    if len(sys.argv) == 5:
        scenario["name"] = sys.argv[4]
    with open(out_path, "w") as f:
        json.dump(scenario, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
