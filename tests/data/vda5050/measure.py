"""Order -> first state with driving: true, and SIGSTOP -> CONNECTIONBROKEN, on a `fleet up` fleet."""
import json, os, signal, subprocess, sys, time, threading, queue
d, port = sys.argv[1], sys.argv[2]
pw = open(f"{d}/operator.password").read().strip()
vpw = open(f"{d}/viewer.password").read().strip()
# The broker's client id is the user name: the watcher logs in as the viewer, or the operator's publishes would take its place.
sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", port, "-u", "viewer", "-P", vpw,
                        "-i", "lat-sub", "-t", "uagv/#", "-t", "robobrain/+/events", "-F", "%U %t %p"], stdout=subprocess.PIPE, text=True)
q = queue.Queue()
threading.Thread(target=lambda: [q.put(l) for l in sub.stdout], daemon=True).start()
def until(pred, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try: line = q.get(timeout=0.5)
        except queue.Empty: continue
        ts, topic, payload = line.split(" ", 2)
        try: v = json.loads(payload)
        except ValueError: continue
        if pred(topic, v): return float(ts), v
    raise SystemExit("timeout")
def pub(leaf, msg):
    subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", port, "-u", "operator", "-P", pw, "-i", "lat-pub",
                    "-t", f"uagv/v2/robobrain/robot-1/{leaf}", "-m", json.dumps(msg)], check=True)
hdr = lambda i: {"headerId": i, "timestamp": "2026-12-02T00:00:00.000Z", "version": "2.1.0", "manufacturer": "robobrain", "serialNumber": "robot-1"}
lat = []
targets = ["kitchen", "living_room", "hallway", "living_room", "charger", "living_room", "kitchen", "living_room", "hallway", "living_room"]
for i, zone in enumerate(targets[:int(os.environ.get("N", "10"))]):
    _, st = until(lambda t, v: t.endswith("/state") and not v["driving"] and not any(a["actionStatus"] == "RUNNING" for a in v["actionStates"]))
    p = st["agvPosition"]
    oid = f"lat{i}"
    order = dict(hdr(i), orderId=oid, orderUpdateId=0,
                 nodes=[{"nodeId": "here", "sequenceId": 0, "released": True, "actions": [], "nodePosition": {"x": p["x"], "y": p["y"], "mapId": p["mapId"]}},
                        {"nodeId": zone, "sequenceId": 2, "released": True, "actions": []}],
                 edges=[{"edgeId": "e", "sequenceId": 1, "released": True, "startNodeId": "here", "endNodeId": zone, "actions": []}])
    while not q.empty(): q.get()
    t0 = time.time(); pub("order", order)
    trace = []; trace_state = []
    def watch(t, v):
        if t.endswith("/events"):
            e = v.get("event", {}); trace.append((round((time.time() - t0) * 1000), e.get("kind"), e.get("skill") or e.get("reason") or e.get("status") or ""))
        if t.endswith("/state") and v["orderId"] == oid and not trace_state:
            trace_state.append(round((time.time() - t0) * 1000))
        return t.endswith("/state") and v["orderId"] == oid and v["driving"]
    t1, v = until(watch)
    if i < 2: print("accepted state at", trace_state, "events", trace)
    lat.append((t1 - t0) * 1000)
    time.sleep(1.0)
    pub("instantActions", dict(hdr(100 + i), actions=[{"actionType": "cancelOrder", "actionId": f"c{i}", "blockingType": "HARD"}]))
    until(lambda t, v: t.endswith("/state") and any(a["actionId"] == f"c{i}" and a["actionStatus"] == "FINISHED" for a in v["actionStates"]))
lat.sort()
print("order -> driving ms:", " ".join(f"{x:.0f}" for x in lat), f"median {lat[len(lat)//2]:.0f}")
pid = int([l.split()[1] for l in open(f"{d}/pids") if l.startswith("robot-1 ")][0])
broken = []
for k in range(3):
    if k:
        until(lambda t, v: t.endswith("/connection") and v["connectionState"] == "ONLINE", 60)
        time.sleep(2)
    t0 = time.time(); os.kill(pid, signal.SIGSTOP)
    t1, _ = until(lambda t, v: t.endswith("/connection") and v["connectionState"] == "CONNECTIONBROKEN", 30)
    broken.append(t1 - t0); os.kill(pid, signal.SIGCONT)
print("SIGSTOP -> CONNECTIONBROKEN s:", " ".join(f"{x:.1f}" for x in broken))
sub.kill()
