"""Shared by the Python benches (scripts/bench_*.py): record a figure the way
the Rust benches do (src-core/benches/figures.rs) — one JSON line with id,
name, value and unit appended to the file named by ROBOBRAIN_BENCH_FIGURES,
which scripts/bench.sh collects into target/bench/results.json.

As a command (scripts/bench.sh): `record ID NAME VALUE UNIT`, or turn a
tool's output on stdin into figures: `eval MODE` (robobrain memory eval),
`assist [LABEL]` (robobrain assist --json), `assist_peer [LABEL]`
(scripts/assist_hassil.py), `page` (ui/tests/bench.mjs),
`lines ID NAME REGEX UNIT` (a test's printed timings)."""
import json
import os
import re
import sys


def record(fid, name, value, unit):
    """Appends one figure to $ROBOBRAIN_BENCH_FIGURES (nothing without it)."""
    path = os.environ.get("ROBOBRAIN_BENCH_FIGURES")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"id": fid, "name": name, "value": value, "unit": unit}, ensure_ascii=False) + "\n")


def percentile(sorted_xs, q):
    """The nearest-rank percentile q (0–1) of sorted samples, as the Rust benches take it."""
    return sorted_xs[round((len(sorted_xs) - 1) * q)]


def record_spread(fid, name, xs, unit):
    """Records p50, p99 and max of xs (already in unit) as fid.p50, fid.p99, fid.max."""
    s = sorted(xs)
    for stat, q in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
        record(f"{fid}.{stat}", f"{name}, {stat} of {len(s)}", percentile(s, q), unit)


def _eval(mode):
    """`robobrain memory eval --mode MODE` JSON on stdin: quality on the eval set."""
    r = json.load(sys.stdin)
    for key in ("hit@5", "hit@10", "recall@10", "mrr"):
        record(f"memory.eval.{mode}.{key.replace('@', '')}", f"{key} on the eval set, {mode}", r[key], "")


def _assist(label):
    """`robobrain assist --json` on stdin: pass counts overall and per category.
    assist-mini keeps the ids `assist.*`; another dataset `assist.LABEL.*`."""
    r = json.load(sys.stdin)
    o = r["overall"]
    fid = "assist" if label == "assist-mini" else f"assist.{label}"
    record(f"{fid}.passed", f"{label} sentences passed (robobrain, engine, no model)", o["passed"], f"of {o['total']}")
    record(f"{fid}.total", f"{label} sentences", o["total"], "")
    record(f"{fid}.rate", f"{label} pass rate (robobrain)", 100.0 * o["passed"] / max(o["total"], 1), "%")
    record(f"{fid}.confirmations", f"{label} approvals asked for and given", o["confirmations"], "")
    for stat in ("p50_ms", "p99_ms"):
        record(f"{fid}.latency.{stat[:3]}", f"{label} sentence → settled turn, {stat[:3]}", r["latency"][stat], "ms")
    for cat, c in r["by_category"].items():
        record(f"{fid}.{cat}.passed", f"{label} {cat} passed", c["passed"], f"of {c['total']}")


def _assist_peer(label):
    """scripts/assist_hassil.py's report on stdin: hassil's pass counts."""
    r = json.load(sys.stdin)
    o = r["overall"]
    fid = "assist.peer" if label == "assist-mini" else f"assist.{label}.peer"
    record(f"{fid}.passed", f"{label} sentences passed (hassil, same grammar and homes, no model)", o["passed"], f"of {o['total']}")
    record(f"{fid}.rate", f"{label} pass rate (hassil)", 100.0 * o["passed"] / max(o["total"], 1), "%")
    for cat, c in r["by_category"].items():
        record(f"{fid}.{cat}.passed", f"{label} {cat} passed (hassil)", c["passed"], f"of {c['total']}")


def _page():
    """ui/tests/bench.mjs JSON on stdin: the page in Chromium."""
    r = json.load(sys.stdin)
    load, dom = r["load_to_first_snapshot_ms"], r["event_to_dom_ms"]
    for stat in ("p50", "p99"):
        record(f"page.load.{stat}", f"page load → first snapshot painted, {stat} of {load['n']}", load[stat], "ms")
    for stat in ("p50", "p99", "max"):
        record(f"page.event_to_dom.{stat}", f"event → DOM, {stat} of {dom['n']}", dom[stat], "ms")
    record("page.events_per_s", "events per second the page received", r["events_per_s"], "events/s")


def _lines(fid, name, pattern, unit):
    """Test output on stdin: every match of `pattern` (one number in ms, or a Rust
    Duration's Debug form) is a sample; records p50, p99 and max. None found is an error."""
    xs = []
    for line in sys.stdin:
        m = re.search(pattern, line)
        if m:
            v, u = float(m.group(1)), m.group(2) if m.lastindex and m.lastindex > 1 else "ms"
            xs.append(v * {"s": 1e3, "ms": 1.0, "µs": 1e-3, "ns": 1e-6}[u])
    if not xs:
        sys.exit(f"no line matched {pattern!r}: has the test's output changed?")
    record_spread(fid, name, xs, unit)


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "record":
        fid, name, value, unit = args
        record(fid, name, float(value), unit)
    elif what == "eval":
        _eval(*args)
    elif what == "assist":
        _assist(*(args or ["assist-mini"]))
    elif what == "assist_peer":
        _assist_peer(*(args or ["assist-mini"]))
    elif what == "page":
        _page()
    elif what == "lines":
        _lines(*args)
    else:
        sys.exit(f"unknown: {what} (record, eval, assist, page, lines)")
