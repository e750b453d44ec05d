"""Home Assistant's own matcher as the peer of `robobrain assist`.

    python scripts/assist_hassil.py DATASET [--intents DIR]
        -> the report as JSON on stdout, shaped like `robobrain assist --json`:
           {"assistant", "overall", "by_category", "by_language", "results": [...]}

Each sentence of a home-assistant-datasets folder (read as upstream reads it:
every `.yaml` below DATASET but `_fixtures.yaml`, `_home.yaml`,
`solution.yaml` and `dataset_card.yaml` is a test file whose home is the
`_fixtures.yaml` beside it) is recognized by hassil with Home Assistant's
compiled grammar — the same `{lang}.json` robobrain loads (DIR, default
$ROBOBRAIN_INTENTS_DIR or ~/.cache/robobrain/intents) — and slot lists
built from the same home as Home Assistant builds them: every entity's name
with its domain and device class as context, every area, every
floor (the areas' `floor` fields and a `floors:` list). A case's
`context_device` gives the area as context, as a voice satellite does.
No model.

What hassil recognised is applied to the home's states the way Home
Assistant's intent handlers pick targets (name, area, floor, domain, device
class; a name two entities share is refused unless the speaker's area
decides) and its services change states (as robobrain's simulator does:
`src-home/src/assist/world.rs`), then judged by upstream's rules
(`src-home/src/assist/runner.rs`: expected = before + expect_changes,
ignore_changes dropped before anything counts, "Sorry" fails a changing
case, expect_response needs one substring). The peer renders no response
templates, so a case judged on its answer fails here: its figure on a
question set counts recognition and state only.
"""

import json
import os
import re
import sys
import time
from pathlib import Path

import yaml
from hassil.intents import Intents, TextSlotList, TextSlotValue
from hassil.recognize import recognize_best

NOT_TESTS = {"_fixtures.yaml", "_home.yaml", "solution.yaml", "dataset_card.yaml"}
DERIVED = {"is_closed", "is_opening", "is_closing"}
TUPLES = {"hs_color", "rgb_color", "rgbw_color", "rgbww_color", "xy_color", "color_temp_kelvin_range"}


def slug(name):
    return re.sub(r"[^\w]+", "_", name.lower()).strip("_")


def text(v):
    """A YAML scalar state as robobrain reads it."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def load_home(path):
    raw = load_yaml(path)
    floors = {}
    for f in raw.get("floors") or []:
        floors[f["id"]] = {"name": f["name"], "aliases": f.get("aliases", [])}
    areas = {}
    for a in raw.get("areas") or []:
        aid = a.get("id") or slug(a["name"])
        floor = text(a.get("floor"))
        if floor is not None:
            found = next((fid for fid, f in floors.items() if floor.lower() in [fid.lower(), f["name"].lower()] + [x.lower() for x in f["aliases"]]), None)
            if found is None:
                found = slug(floor)
                floors[found] = {"name": floor, "aliases": []}
            floor = found
        areas[aid] = {"name": a["name"], "floor": floor}
    devices = {}
    for d in raw.get("devices") or []:
        devices[d.get("id") or slug(d["name"])] = {"name": d["name"], "area": d.get("area")}
    entities = {}
    for e in raw.get("entities") or []:
        state = e.get("state")
        attrs = dict(e.get("attributes") or {})
        if isinstance(state, dict):
            attrs.update(state.get("attributes") or {})
            state = state.get("state")
        dev = devices.get(e.get("device"))
        name = e.get("name") or (dev["name"] if dev else e["id"].split(".", 1)[1].replace("_", " "))
        area = e.get("area") or (dev["area"] if dev else None)
        entities[e["id"]] = {"name": name, "device_name": dev["name"] if dev else None, "area": area, "state": text(state), "attributes": attrs}
    return {"language": raw.get("language"), "floors": floors, "areas": areas, "devices": devices, "entities": entities}


def default_state(eid, attrs):
    domain = eid.split(".", 1)[0]
    pos = next((attrs[k] for k in ("current_position", "current_valve_position") if isinstance(attrs.get(k), (int, float))), None)
    if domain == "sensor" and attrs.get("native_value") is not None:
        return text(attrs["native_value"])
    if domain in ("cover", "valve") and pos is not None:
        return "open" if pos > 0 else "closed"
    if domain == "todo":
        return "0"
    return "on"


def states_of(home, setup):
    out = {}
    for eid, e in home["entities"].items():
        attrs = dict(e["attributes"])
        state = e["state"]
        patch = setup.get(eid) or {}
        if patch.get("state") is not None:
            state = text(patch["state"])
        for k, v in (patch.get("attributes") or {}).items():
            if v is None:
                attrs.pop(k, None)
            else:
                attrs[k] = v
        s = dict(attrs)
        s["state"] = state if state is not None else default_state(eid, attrs)
        out[eid] = s
    return out


def slot_lists(home):
    names = []
    for eid, e in home["entities"].items():
        context = {"domain": eid.split(".", 1)[0]}
        dc = e["attributes"].get("device_class")
        if isinstance(dc, str):
            context["device_class"] = dc.rsplit(".", 1)[-1].lower()
        names.append(TextSlotValue.from_tuple((e["name"], e["name"], context), allow_template=False))
    areas = [TextSlotValue.from_tuple((a["name"], aid), allow_template=False) for aid, a in home["areas"].items()]
    floors = []
    for fid, f in home["floors"].items():
        for n in [f["name"]] + f["aliases"]:
            floors.append(TextSlotValue.from_tuple((n, fid), allow_template=False))
    return {
        "name": TextSlotList(name="name", values=names),
        "area": TextSlotList(name="area", values=areas),
        "floor": TextSlotList(name="floor", values=floors),
    }


def feature(features, name, bit):
    if features is None:
        return True
    if isinstance(features, int):
        return bool(features & bit)
    if isinstance(features, list):
        return any(str(f).rsplit(".", 1)[-1] == name or f == bit for f in features)
    return True


def has_speed(s):
    f = s.get("supported_features")
    return feature(f, "SET_SPEED", 1) if f is not None else "percentage" in s


def position_key(s):
    for k in ("current_position", "current_valve_position"):
        if k in s:
            return k
    f = s.get("supported_features")
    return "current_position" if f is not None and feature(f, "SET_POSITION", 4) else None


def service(eid, s, name, args):
    """The state after the service, as robobrain's simulator moves it."""
    domain = eid.split(".", 1)[0]
    s = dict(s)
    modes = s.get("supported_color_modes") if isinstance(s.get("supported_color_modes"), list) else None
    if domain == "light" and name in ("turn_on", "set_brightness", "set_color"):
        if name == "set_brightness" and args["level"] == 0:
            return service(eid, s, "turn_off", {})
        dimmable = any(m != "onoff" for m in modes or [])
        s["state"] = "on"
        if name == "set_brightness" and dimmable:
            s["brightness"] = round(args["level"] * 255 / 100)
        if dimmable and s.get("brightness") is None:
            s["brightness"] = 255
        if modes is not None and s.get("color_mode") is None:
            s["color_mode"] = "brightness" if dimmable else "onoff"
    elif domain == "light" and name == "turn_off":
        s["state"] = "off"
        s.pop("brightness", None)
        s.pop("color_mode", None)
    elif domain == "fan" and name == "turn_on":
        s["state"] = "on"
        if has_speed(s) and not s.get("percentage"):
            s["percentage"] = 100
    elif domain == "fan" and name == "turn_off":
        s["state"] = "off"
        if has_speed(s):
            s["percentage"] = 0
    elif domain == "fan" and name == "set_speed":
        s["state"] = "on" if args["level"] > 0 else "off"
        s["percentage"] = args["level"]
    elif domain in ("cover", "valve") and name in ("open", "close", "set_position"):
        pos = {"open": 100, "close": 0}.get(name, args.get("position"))
        s["state"] = "open" if pos > 0 else "closed"
        if (k := position_key(s)) is not None:
            s[k] = pos
    elif name in ("turn_on", "turn_off") and domain in ("switch", "input_boolean", "media_player"):
        s["state"] = name[5:]
    elif domain == "lock" and name in ("lock", "unlock"):
        s["state"] = name + "ed"
    elif domain == "vacuum" and name in ("start", "stop", "pause", "return_to_base"):
        s["state"] = {"start": "cleaning", "stop": "idle", "pause": "paused", "return_to_base": "returning"}[name]
    elif domain == "media_player" and name in ("play", "pause", "stop"):
        s["state"] = {"play": "playing", "pause": "paused", "stop": "idle"}[name]
    elif domain == "media_player" and name in ("next_track", "previous_track"):
        s["media_track"] = max(1, (s.get("media_track") or 0) + (1 if name == "next_track" else -1))
    elif domain == "media_player" and name == "set_volume":
        s["volume_level"] = args["level"] / 100
    elif domain == "media_player" and name == "mute":
        s["volume_level"] = 0.0
    elif domain == "todo" and name == "add_item":
        s["state"] = str(int(s.get("state") or 0) + 1 if str(s.get("state") or "0").isdigit() else 1)
    else:
        raise ValueError(f"no service {name} for {domain}")
    return s


CALLS = {
    ("HassTurnOn", "cover"): "open", ("HassTurnOff", "cover"): "close",
    ("HassTurnOn", "valve"): "open", ("HassTurnOff", "valve"): "close",
    ("HassTurnOn", "lock"): "lock", ("HassTurnOff", "lock"): "unlock",
    ("HassTurnOn", "vacuum"): "start", ("HassTurnOff", "vacuum"): "return_to_base",
}
SIMPLE = {
    "HassVacuumStart": "start", "HassVacuumReturnToBase": "return_to_base",
    "HassMediaPause": "pause", "HassMediaUnpause": "play", "HassMediaNext": "next_track",
    "HassMediaPrevious": "previous_track", "HassMediaPlayerMute": "mute",
}


def call_for(intent, slots, eid):
    domain = eid.split(".", 1)[0]
    if (intent, domain) in CALLS:
        return CALLS[(intent, domain)], {}
    if intent in ("HassTurnOn", "HassTurnOff"):
        return ("turn_on" if intent == "HassTurnOn" else "turn_off"), {}
    if intent in SIMPLE:
        return SIMPLE[intent], {}
    if intent == "HassLightSet" and "brightness" in slots:
        return "set_brightness", {"level": int(round(float(slots["brightness"])))}
    if intent == "HassLightSet" and "color" in slots:
        return "set_color", {"color": slots["color"]}
    if intent == "HassSetPosition" and "position" in slots:
        return "set_position", {"position": int(round(float(slots["position"])))}
    if intent == "HassFanSetSpeed" and "percentage" in slots:
        return "set_speed", {"level": int(round(float(slots["percentage"])))}
    if intent == "HassSetVolume" and "volume_level" in slots:
        return "set_volume", {"level": int(round(float(slots["volume_level"])))}
    if intent in ("HassListAddItem", "HassShoppingListAddItem") and "item" in slots:
        return "add_item", {"item": slots["item"]}
    return None


def targets(home, slots, here):
    """Entities the slots name, as Home Assistant's target matching picks them."""
    want_domain = slots.get("domain")
    domains = set(want_domain) if isinstance(want_domain, list) else ({want_domain} if want_domain else None)
    dc = slots.get("device_class")
    classes = set(dc) if isinstance(dc, list) else ({dc} if dc else None)
    out = []
    for eid, e in home["entities"].items():
        area = e["area"]
        if "name" in slots and slots["name"].lower() != e["name"].lower():
            continue
        if "area" in slots and area != slots["area"]:
            continue
        if "floor" in slots and (home["areas"].get(area) or {}).get("floor") != slots["floor"]:
            continue
        if domains and eid.split(".", 1)[0] not in domains:
            continue
        if classes and str(e["attributes"].get("device_class", "")).rsplit(".", 1)[-1].lower() not in classes:
            continue
        out.append(eid)
    if "name" in slots and len(out) > 1 and here:
        near = [eid for eid in out if home["entities"][eid]["area"] == here]
        out = near or out
    return out


def py_eq(a, b):
    return a == b or str(a) == str(b)


def judge(case, before, after):
    expected = {k: dict(v) for k, v in before.items()}
    for eid, want in (case.get("expect_changes") or {}).items():
        want = want or {}
        if want.get("state") is not None:
            expected[eid]["state"] = text(want["state"])
        expected[eid].update(want.get("attributes") or {})
    ignore = case.get("ignore_changes") or {}
    diffs = []
    for eid, want in expected.items():
        got = after.get(eid, {})
        skip = DERIVED | set(ignore.get(eid) or [])
        for k, v in want.items():
            if k in skip:
                continue
            g = got.get(k)
            ok = (g is not None or v is None) if k in TUPLES else py_eq(g, v)
            if not ok:
                diffs.append(f"{eid} {k} is {g!r}, expected {v!r}")
        diffs += [f"unexpected change: {eid} {k} appeared" for k in got if k and k not in want and k not in skip]
    return diffs


def test_files(root):
    return sorted(p for p in Path(root).rglob("*.yaml") if p.name not in NOT_TESTS and not any(part.startswith(".") for part in p.parts))


def run(dataset, intents_dir):
    grammars = {}
    results = []
    homes = {}
    for path in test_files(dataset):
        fixtures = path.parent / "_fixtures.yaml"
        if fixtures not in homes:
            homes[fixtures] = load_home(fixtures)
        home = homes[fixtures]
        lang = home["language"] or "en"
        lang = {"zh": "zh-CN", "zh-cn": "zh-CN", "zh-hans": "zh-CN"}.get(lang.lower(), lang)
        if lang not in grammars:
            f = Path(intents_dir) / f"{lang}.json"
            grammars[lang] = Intents.from_dict(json.load(open(f, encoding="utf-8"))) if f.is_file() else None
        intents = grammars[lang]
        lists = slot_lists(home)
        tests = load_yaml(path)
        cats = tests["category"] if isinstance(tests["category"], list) else [tests["category"]]
        for i, case in enumerate(tests.get("tests") or []):
            for sentence in case["sentences"]:
                before = states_of(home, case.get("setup") or {})
                after = {k: dict(v) for k, v in before.items()}
                here = None
                if case.get("context_device"):
                    d = case["context_device"]
                    here = (home["devices"].get(d) or {}).get("area") or (home["entities"].get(d) or {}).get("area")
                context = {"area": {"value": here, "text": home["areas"][here]["name"]}} if here in home["areas"] else None
                start = time.perf_counter()
                result = recognize_best(sentence, intents, slot_lists=lists, intent_context=context, best_slot_name="name") if intents else None
                ms = (time.perf_counter() - start) * 1000
                note, intent = None, None
                if result is None:
                    note = "not recognised" if intents else f"no grammar for {lang}"
                else:
                    intent = result.intent.name
                    slots = {k: e.value for k, e in result.entities.items()}
                    # What the template requires of its target narrows it as in Home Assistant.
                    for k, v in (result.intent_data.requires_context or {}).items():
                        if k in ("domain", "device_class"):
                            slots.setdefault(k, v)
                    if here and "area" not in slots and "name" not in slots:
                        slots["area"] = here
                    found = targets(home, slots, here)
                    if not found or ("name" in slots and len(found) > 1):
                        note = f"{intent}: {len(found)} targets"
                    for eid in found if note is None else []:
                        call = call_for(intent, slots, eid)
                        if call is None:
                            note = f"{intent}: nothing to do to {eid}"
                            continue
                        try:
                            after[eid] = service(eid, after[eid], *call)
                        except (ValueError, KeyError, TypeError) as err:
                            note = str(err)
                diffs = judge(case, before, after)
                if not diffs and case.get("expect_response"):
                    diffs = ["no answer (the peer renders no responses)"]
                results.append({
                    "home": str(path.parent.relative_to(dataset)) if path.parent != Path(dataset) else Path(dataset).name,
                    "file": str(path), "category": cats[0], "categories": cats, "case": i,
                    "sentence": sentence, "language": lang, "passed": not diffs,
                    "reason": "; ".join(diffs) + (f" ({note})" if note else "") if diffs else None,
                    "intent": intent, "latency_ms": ms,
                })
    return results


def tally(results, key):
    out = {}
    for r in results:
        for k in key(r):
            t = out.setdefault(k, {"passed": 0, "total": 0})
            t["total"] += 1
            t["passed"] += r["passed"]
    return out


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    dataset = Path(args[0])
    intents_dir = os.environ.get("ROBOBRAIN_INTENTS_DIR") or str(Path.home() / ".cache/robobrain/intents")
    if "--intents" in args:
        intents_dir = args[args.index("--intents") + 1]
    results = run(dataset, intents_dir)
    ms = sorted(r["latency_ms"] for r in results) or [0.0]
    report = {
        "assistant": "hassil",
        "overall": {"passed": sum(r["passed"] for r in results), "total": len(results)},
        "by_category": tally(results, lambda r: r["categories"]),
        "by_language": tally(results, lambda r: [r["language"]]),
        "latency": {"p50_ms": ms[round((len(ms) - 1) * 0.5)], "p99_ms": ms[round((len(ms) - 1) * 0.99)], "max_ms": ms[-1]},
        "results": results,
    }
    json.dump(report, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()
