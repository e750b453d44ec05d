#!/usr/bin/env python3
"""Collects one `./x bench` run into target/bench/results.json.

Inputs (written by scripts/bench.sh into RUN_DIR): `figures-GROUP.jsonl`,
the figures each group's benches recorded (JSON lines: id, name, value,
unit), and `groups.jsonl`, one line per group run (group, start and end
dates, load average before and after, seconds, exit status).
The results file keeps the figures of groups not run this time, so
`./x bench durable` refreshes the durable group only; each group says when,
at which commit and under which load its figures were measured.

Ratios against the peers are computed here, and only from figures measured
in the same invocation (a ratio across runs would compare two machines'
moods). tests/bench_docs.rs runs this script on a made-up run and checks
the file against what docs/BENCHMARKS.md says it holds.

Usage: bench_results.py RUN_DIR RESULTS
       bench_results.py render RESULTS [PAGE]

`render` writes the page docs/benchmarks/results.md is (every figure of a
results file, by group, with the group's commit, date and load) to PAGE, or
prints it; tests/bench_docs.rs checks that the committed page is the
committed docs/benchmarks/results.json rendered.
"""
import json
import os
import platform
import subprocess
import sys

# (id, name, numerator, denominator): a peer's figure over ours, or the
# other way round where ours is the larger (model latency over template).
RATIOS = [
    ("ratio.langgraph_none_vs_react", "LangGraph without a checkpointer (p50) / robobrain's iteration without persistence (median)",
     "langgraph.none.iteration.p50", "react.iteration"),
    ("ratio.langgraph_memory_vs_react", "LangGraph with InMemorySaver per node (p50) / robobrain's iteration without persistence (median)",
     "langgraph.memory.iteration.p50", "react.iteration"),
    ("ratio.langgraph_sqlite_node_vs_durable", "LangGraph with SqliteSaver per node (p50) / robobrain's durable iteration (median)",
     "langgraph.sqlite_node.iteration.p50", "durable.iteration"),
    ("ratio.langgraph_sqlite_tick_vs_durable", "LangGraph with SqliteSaver per iteration (p50) / robobrain's durable iteration (median)",
     "langgraph.sqlite_tick.iteration.p50", "durable.iteration"),
    ("ratio.langgraph_sqlite_node_bytes", "LangGraph SqliteSaver per node: checkpoint bytes per iteration / robobrain's",
     "langgraph.sqlite_node.checkpoint_bytes_per_iteration", "durable.checkpoint_bytes_per_iteration"),
    ("ratio.langgraph_sqlite_tick_bytes", "LangGraph SqliteSaver per iteration: checkpoint bytes per iteration / robobrain's",
     "langgraph.sqlite_tick.checkpoint_bytes_per_iteration", "durable.checkpoint_bytes_per_iteration"),
    ("ratio.langgraph_sqlite_tick_file_bytes", "LangGraph SqliteSaver per iteration: database bytes per iteration / robobrain's",
     "langgraph.sqlite_tick.file_bytes_per_iteration", "durable.file_bytes_per_iteration"),
    ("ratio.rank_bm25_vs_bm25_10k", "rank_bm25 p50 / robobrain BM25 p50, 10k memories",
     "memory.10k.rank_bm25.p50", "memory.10k.bm25.p50"),
    ("ratio.rank_bm25_vs_hybrid_10k", "rank_bm25 p50 / robobrain hybrid end to end p50, 10k memories",
     "memory.10k.rank_bm25.p50", "memory.10k.hybrid.p50"),
    ("ratio.rank_bm25_vs_bm25_100k", "rank_bm25 p50 / robobrain BM25 p50, 100k memories",
     "memory.100k.rank_bm25.p50", "memory.100k.bm25.p50"),
    ("ratio.rank_bm25_vs_hybrid_100k", "rank_bm25 p50 / robobrain hybrid end to end p50, 100k memories",
     "memory.100k.rank_bm25.p50", "memory.100k.hybrid.p50"),
]


def machine():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            mem = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": mem, "os": platform.platform()}


def git(*args):
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    run_dir, results_path = sys.argv[1:]
    groups = read_lines(os.path.join(run_dir, "groups.jsonl"))
    try:
        with open(results_path, encoding="utf-8") as f:
            results = json.load(f)
    except (OSError, ValueError):
        results = {"format": 1, "groups": {}, "figures": {}}
    commit = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    run_groups = {g["group"] for g in groups}
    # Figures of a group run now replace that group's old ones.
    results["figures"] = {k: v for k, v in results["figures"].items() if v.get("group") not in run_groups}
    for g in groups:
        results["groups"][g["group"]] = {**{k: v for k, v in g.items() if k != "group"}, "commit": commit, "dirty": dirty}
    fresh = {}
    for g in groups:
        # The 1-minute load average around the group, quotable like any figure.
        for when in ("before", "after"):
            fresh[f"load.{g['group']}.{when}"] = {
                "name": f"1-minute load average {when} the {g['group']} group (2 cores)",
                "value": g[f"load_{when}"][0], "unit": "", "group": g["group"]}
        for f in read_lines(os.path.join(run_dir, f"figures-{g['group']}.jsonl")):
            fresh[f["id"]] = {"name": f["name"], "value": f["value"], "unit": f["unit"], "group": g["group"]}
    for rid, name, num, den in RATIOS:
        if num in fresh and den in fresh and fresh[den]["value"]:
            fresh[rid] = {"name": name, "value": fresh[num]["value"] / fresh[den]["value"], "unit": "×",
                          "group": fresh[num]["group"], "of": [num, den]}
    results["figures"].update(fresh)
    results["figures"] = dict(sorted(results["figures"].items()))
    results.update({
        "format": 1,
        "commit": commit,
        "dirty": dirty,
        "date": groups[-1]["ended"] if groups else None,
        "machine": machine(),
        "load": {"before": groups[0]["load_before"], "after": groups[-1]["load_after"]} if groups else None,
    })
    text = json.dumps(results, indent=1, ensure_ascii=False) + "\n"
    with open(results_path, "w", encoding="utf-8") as f:
        f.write(text)
    width = max((len(k) for k in fresh), default=0)
    print(f"\n{len(fresh)} figures from {', '.join(sorted(run_groups))} in {results_path}")
    for g in groups:
        print(f"  {g['group']}: {g['seconds']:.0f} s, load {' '.join(map(str, g['load_before']))} → "
              f"{' '.join(map(str, g['load_after']))}{'' if g['ok'] else '  FAILED'}")
    for k, v in sorted(fresh.items()):
        if k.startswith("ratio."):
            print(f"  {k:<{width}}  {v['value']:>10.1f} ×  {v['name']}")


def number(value):
    """A figure as people read it: three significant digits, no exponent."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    for digits in range(0, 7):
        if abs(value) >= 10 ** (2 - digits) or digits == 6:
            return f"{value:.{digits}f}"
    return str(value)


def render(results):
    """The results page: a table per group, figures sorted by id."""
    m = results.get("machine") or {}
    out = [
        "# The last `./x bench` run",
        "",
        "Generated by `python3 scripts/bench_results.py render docs/benchmarks/results.json "
        "docs/benchmarks/results.md` from the committed copy of `target/bench/results.json`; "
        "do not edit by hand (`tests/bench_docs.rs` checks it). What each figure means, and "
        "the targets: [../BENCHMARKS.md](../BENCHMARKS.md).",
        "",
        f"- last group ended: {results.get('date')}",
        f"- machine: {m.get('cpu')}, {m.get('cores')} cores, {m.get('memory_gib')} GiB, {m.get('os')}",
        "",
    ]
    by_group = {}
    for fid, f in results.get("figures", {}).items():
        by_group.setdefault(f.get("group"), []).append((fid, f))
    for group, g in sorted(results.get("groups", {}).items()):
        load = lambda xs: " / ".join(number(x) for x in xs)
        out += [
            f"## {group}",
            "",
            f"Commit `{(g.get('commit') or '?')[:10]}`{' (uncommitted changes)' if g.get('dirty') else ''}, "
            f"{g.get('started')} → {g.get('ended')} ({number(g.get('seconds', 0))} s), "
            f"load average (1/5/15 min) {load(g.get('load_before', []))} before, "
            f"{load(g.get('load_after', []))} after{'' if g.get('ok', True) else '; **the group failed**'}.",
            "",
            "| id | figure | value |",
            "|---|---|---|",
        ]
        for fid, f in sorted(by_group.get(group, [])):
            if fid.startswith("load."):
                continue
            unit = f" {f['unit']}" if f.get("unit") else ""
            out.append(f"| `{fid}` | {f['name']} | {number(f['value'])}{unit} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "render":
        with open(sys.argv[2], encoding="utf-8") as f:
            page = render(json.load(f))
        if len(sys.argv) > 3:
            with open(sys.argv[3], "w", encoding="utf-8") as f:
                f.write(page)
        else:
            sys.stdout.write(page)
    else:
        main()
