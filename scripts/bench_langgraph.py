#!/usr/bin/env python3
"""LangGraph, the peer seed 003 proposes, on robobrain's six-node ReAct loop.

The graph is the loop robobrain's benches time (src-core/benches/react.rs,
durable.rs): observe -> decide -> compile -> guardrails -> dispatch ->
observe_result, one invoke per iteration (one iteration is one robobrain
tick), over an instant robot that finishes every goal at once. The decision
is the rule brain's for a patrol (src-core/src/brain/rule.rs): start or carry
on -> CONTINUE with a navigate_to dispatch of the current step; the last step
done -> FINISH with a speak op; then a new two-stop patrol, as the Rust bench
submits one whenever the robot runs out of work. Guardrails check the skill,
its zone, the mode, the base's holder and the approval policy; dispatch
writes the ledger's `started` row into the state. The state carries what
robobrain's checkpoint carries for the loop: the task and its plan, the 20
newest finished tasks, running goals, open ledger rows, and each node's
output (observation, decision, ops, verdicts, this tick's events).

Modes (--modes, comma-separated):
  none         no checkpointer (the state is passed in and out)
  memory       InMemorySaver, a checkpoint after every node (durability="sync")
  sqlite_node  SqliteSaver, a checkpoint after every node (durability="sync"),
               as LangGraph checkpoints by default
  sqlite_tick  SqliteSaver, one checkpoint per invoke (durability="exit"):
               like for like with robobrain's one commit per tick

SqliteSaver runs on a file in WAL mode (its own setup) with
`synchronous=NORMAL`, robobrain's default. Prints a line per mode and records
per-iteration time (mean, p50, p99) and checkpoint bytes through
scripts/bench_figures.py.

Usage: bench_langgraph.py [--iterations N] [--modes M,...]
"""
import argparse
import os
import sqlite3
import sys
import tempfile
import time
from importlib.metadata import version
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_figures  # noqa: E402

THREAD = "bench"
PLAN_WINDOW = 8
KEEP_FINISHED = 20
ZONES = {"kitchen", "bedroom", "living_room", "hall", "bathroom", "study", "dock"}
RESTRICTED = {"outside", "garage"}
SKILLS = {"navigate_to": {"resources": ["base"]}, "speak": {"resources": []}}


class State(TypedDict, total=False):
    tick: int
    time: float
    step: int
    seq: int
    mode: str
    battery_pct: float
    zone: str
    next_task: int
    next_goal: int
    task: dict
    finished: list
    running: list
    ledger: dict
    observation: dict
    decision: dict
    ops: list
    judged: list
    results: list
    events: list


def event(state: State, kind: str, body: dict[str, Any]) -> dict:
    return {"seq": state["seq"], "step": state["step"], "time": state["time"], "thread_id": THREAD, "kind": kind, **body}


def advance(state: State, kind: str, body: dict[str, Any]) -> dict:
    """What every node returns besides its output: the next step and its event."""
    step = state["step"] + 1
    seq = state["seq"] + 1
    ev = event({**state, "step": step, "seq": seq}, kind, body)
    return {"step": step, "seq": seq, "events": state.get("events", []) + [ev]}


def new_patrol(state: State) -> dict:
    n = state["next_task"]
    zones = ["kitchen", "bedroom"]
    return {
        "id": f"t{n}",
        "kind": "patrol",
        "title": "patrol kitchen and bedroom",
        "priority": "user",
        "status": "active",
        "plan": [{"skill": "navigate_to", "args": {"zone": z}} for z in zones],
        "step": 0,
        "iteration": 0,
        "failures": 0,
        "last": None,
        "created": state["time"],
    }


def observe(state: State) -> dict:
    out: dict[str, Any] = {"time": state["time"] + 0.1, "events": []}
    task = state.get("task")
    finished = state.get("finished", [])
    if task is None or task["status"] == "done":
        if task is not None:
            finished = (finished + [task])[-KEEP_FINISHED:]
        task = new_patrol(state)
        out["next_task"] = state["next_task"] + 1
        out["finished"] = finished
    obs = {
        "time": out["time"],
        "task_id": task["id"],
        "task_kind": task["kind"],
        "title": task["title"],
        "plan": task["plan"][task["step"] : task["step"] + PLAN_WINDOW],
        "step": task["step"],
        "plan_len": len(task["plan"]),
        "iteration": task["iteration"] + 1,
        "zone": state["zone"],
        "battery_pct": state["battery_pct"],
        "charging": False,
        "battery_resume_pct": 80.0,
        "distance_to_target": None,
        "running": [g for g in state.get("running", []) if g["task_id"] == task["id"]],
        "last_result": task["last"],
        "failures": task["failures"],
        "no_progress": None,
        "preempt": None,
        "blocked_passages": [],
        "incidents": [],
        "replan_wait_s": 3.0,
    }
    task = {**task, "iteration": task["iteration"] + 1}
    base = advance({**state, **out}, "observation", {"task_id": task["id"], "iteration": task["iteration"]})
    return {**out, **base, "task": task, "observation": obs}


def dispatch_current(obs: dict) -> list:
    return [{"op": "dispatch", "skill": s["skill"], "args": s["args"]} for s in obs["plan"][:1]]


def decide(state: State) -> dict:
    """The rule brain's patrol decision (rule.rs `decide`, the paths a patrol takes)."""
    obs = state["observation"]
    last = obs["last_result"]
    if last is None:
        d = {"type": "CONTINUE", "reason": f"start go to {obs['plan'][0]['args']['zone']}", "ops": dispatch_current(obs)}
    elif last["result"] == "succeeded":
        done = f"{last['skill']} {last['args'].get('zone', '')} succeeded"
        if not obs["plan"]:
            d = {"type": "FINISH", "reason": f"{done}; {obs['title']} is done",
                 "ops": [{"op": "dispatch", "skill": "speak", "args": {"text": f"{obs['title']} is done."}}]}
        else:
            d = {"type": "CONTINUE", "reason": f"{done}; next go to {obs['plan'][0]['args']['zone']}",
                 "ops": dispatch_current(obs)}
    else:
        d = {"type": "REPLAN", "reason": f"{last['skill']} failed; skip it", "plan_patch": {"skip_current": True}, "ops": []}
    return {"decision": d, **advance(state, "decision", {"decision": d})}


def compile_ops(state: State) -> dict:
    d = state["decision"]
    task = state["task"]
    if d.get("plan_patch", {}).get("skip_current"):
        task = {**task, "step": task["step"] + 1}
    ops = [dict(op, index=i) for i, op in enumerate(d["ops"])]
    return {"task": task, "ops": ops, **advance(state, "compiled", {"ops": len(ops)})}


def guardrails(state: State) -> dict:
    judged = []
    held = {r for g in state.get("running", []) for r in SKILLS[g["skill"]]["resources"]}
    for op in state["ops"]:
        spec = SKILLS.get(op["skill"])
        zone = op["args"].get("zone")
        if spec is None:
            verdict, reason = "rejected", f"unknown skill {op['skill']}"
        elif op["skill"] == "navigate_to" and zone not in ZONES:
            verdict, reason = "rejected", f"no zone {zone}"
        elif state["mode"] == "SAFE":
            verdict, reason = "rejected", "SAFE mode: only stop_base may run"
        elif any(r in held for r in spec["resources"]):
            verdict, reason = "rejected", "base is held and not cancelled"
        elif zone in RESTRICTED:
            verdict, reason = "needs_approval", f"{zone} is restricted"
        else:
            verdict, reason = "allowed", f"{op['skill']} passes schema, resources and policy"
        judged.append({"op": op, "verdict": verdict, "reason": reason})
    return {"judged": judged, **advance(state, "guardrail", {"verdicts": [j["verdict"] for j in judged]})}


def dispatch(state: State) -> dict:
    """The only node with side effects: the ledger row, then the goal to the (instant) robot."""
    ledger = dict(state.get("ledger", {}))
    running = list(state.get("running", []))
    results = []
    n = state["next_goal"]
    for j in state["judged"]:
        if j["verdict"] != "allowed":
            continue
        goal_id = f"{THREAD}/g{n}"
        n += 1
        op = j["op"]
        ledger[goal_id] = {"step": state["step"], "op": op["index"], "skill": op["skill"], "status": "started",
                           "request": {"goal_id": goal_id, "kind": op["skill"], "args": op["args"]}}
        running.append({"goal_id": goal_id, "skill": op["skill"], "args": op["args"], "task_id": state["task"]["id"]})
        results.append({"goal_id": goal_id, "outcome": "succeeded", "navigation_time": 1.0})
    return {"ledger": ledger, "running": running, "results": results, "next_goal": n,
            **advance(state, "skill", {"status": "dispatched", "goals": len(results)})}


def observe_result(state: State) -> dict:
    ledger = dict(state["ledger"])
    running = {g["goal_id"]: g for g in state["running"]}
    task = dict(state["task"])
    for r in state["results"]:
        g = running.pop(r["goal_id"])
        ledger.pop(r["goal_id"], None)
        if g["skill"] == "navigate_to":
            task["last"] = {"result": "succeeded", "skill": g["skill"], "args": g["args"]}
            task["step"] += 1
    if state["decision"]["type"] == "FINISH":
        task["status"] = "done"
    return {"ledger": ledger, "running": list(running.values()), "task": task, "results": [],
            "zone": task["last"]["args"]["zone"] if task["last"] else state["zone"],
            **advance(state, "skill", {"status": "succeeded"})}


def graph(checkpointer=None):
    g = StateGraph(State)
    for name, fn in [("observe", observe), ("decide", decide), ("compile", compile_ops),
                     ("guardrails", guardrails), ("dispatch", dispatch), ("observe_result", observe_result)]:
        g.add_node(name, fn)
    g.add_edge(START, "observe")
    g.add_edge("observe", "decide")
    g.add_edge("decide", "compile")
    g.add_edge("compile", "guardrails")
    g.add_edge("guardrails", "dispatch")
    g.add_edge("dispatch", "observe_result")
    g.add_edge("observe_result", END)
    return g.compile(checkpointer=checkpointer)


def initial() -> State:
    return {"tick": 0, "time": 0.0, "step": 0, "seq": 0, "mode": "EXEC", "battery_pct": 90.0, "zone": "dock",
            "next_task": 1, "next_goal": 1, "task": None, "finished": [], "running": [], "ledger": {},
            "observation": {}, "decision": {}, "ops": [], "judged": [], "results": [], "events": []}


def run(mode: str, iterations: int, warmup: int, folder: str) -> dict:
    """Times `iterations` invokes (after `warmup`); returns the figures."""
    conn = None
    if mode == "none":
        app, config, durability = graph(), None, None
    elif mode == "memory":
        app, config, durability = graph(InMemorySaver()), {"configurable": {"thread_id": THREAD}}, "sync"
    else:
        path = os.path.join(folder, f"{mode}.sqlite")
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        conn.execute("PRAGMA synchronous=NORMAL")
        durability = "sync" if mode == "sqlite_node" else "exit"
        app, config = graph(saver), {"configurable": {"thread_id": THREAD}}
    state = initial()
    # The first invoke of a thread with a checkpointer gives the whole state.
    first = True
    times = []
    for i in range(warmup + iterations):
        t = time.perf_counter()
        if config is None:
            state = app.invoke({**state, "tick": i})
        else:
            app.invoke({**state, "tick": i} if first else {"tick": i}, config, durability=durability)
            first = False
        if i >= warmup:
            times.append(time.perf_counter() - t)
    out = {"mean_us": sum(times) / len(times) * 1e6, "times_us": [x * 1e6 for x in times]}
    if conn is not None:
        conn.commit()
        cp, meta = conn.execute("SELECT SUM(LENGTH(checkpoint)), SUM(LENGTH(metadata)) FROM checkpoints").fetchone()
        (writes,) = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()
        (count,) = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()
        total = warmup + iterations
        out["checkpoint_bytes"] = (cp + meta + writes) / total
        out["checkpoints_per_iteration"] = count / total
        conn.close()
        files = [path, path + "-wal"]
        out["file_bytes"] = sum(os.path.getsize(f) for f in files if os.path.exists(f)) / total
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--modes", default="none,memory,sqlite_node,sqlite_tick")
    args = ap.parse_args()
    lg = version("langgraph")
    sq = version("langgraph-checkpoint-sqlite")
    names = {
        "none": "no checkpointer",
        "memory": "InMemorySaver, checkpoint per node",
        "sqlite_node": "SqliteSaver, checkpoint per node",
        "sqlite_tick": "SqliteSaver, checkpoint per iteration",
    }
    with tempfile.TemporaryDirectory(prefix="rb-langgraph-") as folder:
        for mode in args.modes.split(","):
            r = run(mode, args.iterations, args.warmup, folder)
            s = sorted(r["times_us"])
            p50, p99 = bench_figures.percentile(s, 0.5), bench_figures.percentile(s, 0.99)
            line = f"langgraph {lg} ({names[mode]}): {r['mean_us']:.0f} µs per iteration (p50 {p50:.0f}, p99 {p99:.0f}; {len(s)} iterations)"
            fid = f"langgraph.{mode}"
            name = f"LangGraph {lg} six-node loop, {names[mode]}"
            bench_figures.record(f"{fid}.iteration", f"{name}: mean time per iteration", r["mean_us"], "µs")
            bench_figures.record(f"{fid}.iteration.p50", f"{name}: time per iteration, p50", p50, "µs")
            bench_figures.record(f"{fid}.iteration.p99", f"{name}: time per iteration, p99", p99, "µs")
            if "checkpoint_bytes" in r:
                line += (f"; checkpoints + writes {r['checkpoint_bytes']:.0f} B and {r['checkpoints_per_iteration']:.1f}"
                         f" checkpoints per iteration, database file + WAL {r['file_bytes']:.0f} B per iteration"
                         f" (langgraph-checkpoint-sqlite {sq})")
                bench_figures.record(f"{fid}.checkpoint_bytes_per_iteration",
                                     f"{name}: checkpoint + writes bytes per iteration", r["checkpoint_bytes"], "B")
                bench_figures.record(f"{fid}.checkpoints_per_iteration",
                                     f"{name}: checkpoints per iteration", r["checkpoints_per_iteration"], "")
                bench_figures.record(f"{fid}.file_bytes_per_iteration",
                                     f"{name}: database file + WAL bytes per iteration", r["file_bytes"], "B")
            print(line, flush=True)


if __name__ == "__main__":
    main()
