#!/usr/bin/python3
"""Check a Chrome trace as its format defines it, and print what it holds.

Written from the Trace Event Format definition (Google document
1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU, linked from
catapult/docs/trace-event-format.md), the JSON Object Format:

- the file is an object whose "traceEvents" is the list of events;
  "displayTimeUnit" is "ms" or "ns"; "otherData" an object;
- every event has "ph", "pid" and "tid"; every event but metadata has "ts",
  a number of microseconds; "name" and "cat" are strings, "args" an object;
- "X" (complete) events have "dur", microseconds, not negative; the
  complete events of one thread must nest ("the timestamps of the
  complete events on a thread must be properly nested");
- "M" (metadata) events are process_name and thread_name (args.name),
  process_labels (args.labels), process_sort_index and thread_sort_index
  (args.sort_index, an integer);
- flow events "s" / "t" / "f" with the same cat, name and id are one flow;
  it starts with "s", its "f" comes no earlier; an "s" binds to the slice
  that encloses it on its thread, an "f" with "bp": "e" too ("enclosing
  slice"), so such a slice must be there.

Usage: trace-check.py TRACE   prints, per process by sort index,
  "SORT PID PARENT-LABEL | NAME | SLICE-NAMES..." and the flows
  "flow PID-FROM -> PID-TO"; exit 1 with the first violation.
"""
import json
import sys


def fail(msg):
    print("trace-check: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("not the JSON object format (no traceEvents list)")
    if doc.get("displayTimeUnit", "ms") not in ("ms", "ns"):
        fail("displayTimeUnit is neither ms nor ns")
    if "otherData" in doc and not isinstance(doc["otherData"], dict):
        fail("otherData is not an object")
    meta = {}
    slices = {}
    flows = {}
    for i, e in enumerate(doc["traceEvents"]):
        where = "event %d" % i
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            fail(where + ": no ph")
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), int):
                fail(where + ": %s is not an integer" % k)
        for k in ("name", "cat"):
            if k in e and not isinstance(e[k], str):
                fail(where + ": %s is not a string" % k)
        if "args" in e and not isinstance(e["args"], dict):
            fail(where + ": args is not an object")
        ph = e["ph"]
        if ph == "M":
            name = e.get("name")
            key = {"process_name": "name", "thread_name": "name",
                   "process_labels": "labels", "process_sort_index": "sort_index",
                   "thread_sort_index": "sort_index"}.get(name)
            if key is None:
                fail(where + ": unknown metadata %r" % name)
            v = e.get("args", {}).get(key)
            if not isinstance(v, int if key == "sort_index" else str):
                fail(where + ": %s without args.%s" % (name, key))
            meta[(e["pid"], name)] = v
            continue
        if not isinstance(e.get("ts"), (int, float)) or isinstance(e.get("ts"), bool):
            fail(where + ": no ts")
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail(where + ": a complete event without a duration")
            # (In nanoseconds: microseconds to three decimals are exact.)
            ts = round(e["ts"] * 1000)
            slices.setdefault((e["pid"], e["tid"]), []).append(
                (ts, ts + round(e["dur"] * 1000), e.get("name", "")))
        elif ph in ("s", "t", "f"):
            flows.setdefault((e.get("cat"), e.get("name"), e.get("id")), []).append(e)
        else:
            fail(where + ": phase %r not expected here" % ph)
    # Complete events nest on each thread.
    for track, v in slices.items():
        v.sort(key=lambda s: (s[0], -s[1]))
        open_ = []
        for s in v:
            while open_ and open_[-1][1] <= s[0]:
                open_.pop()
            if open_ and s[1] > open_[-1][1]:
                fail("pid %d tid %d: %r [%s, %s] overlaps %r [%s, %s] without nesting"
                     % (track + (s[2], s[0], s[1]) + (open_[-1][2], open_[-1][0], open_[-1][1])))
            open_.append(s)

    def enclosing(e):
        ts = round(e["ts"] * 1000)
        return [s for s in slices.get((e["pid"], e["tid"]), []) if s[0] <= ts <= s[1]]

    out_flows = []
    for key, v in flows.items():
        starts = [e for e in v if e["ph"] == "s"]
        ends = [e for e in v if e["ph"] == "f"]
        if len(starts) != 1 or len(ends) != 1:
            fail("flow %r: not one s and one f" % (key,))
        s, f = starts[0], ends[0]
        if f["ts"] < s["ts"]:
            fail("flow %r ends before it starts" % (key,))
        if not enclosing(s):
            fail("flow %r: no slice encloses its start" % (key,))
        if f.get("bp") == "e" and not enclosing(f):
            fail("flow %r: no slice encloses its end" % (key,))
        out_flows.append("flow %d -> %d" % (s["pid"], f["pid"]))
    pids = sorted({p for p, _ in meta} | {t[0] for t in slices},
                  key=lambda p: (meta.get((p, "process_sort_index"), 1 << 30), p))
    for p in pids:
        names = [s[2] for t, v in sorted(slices.items()) if t[0] == p for s in v]
        print("%s %d %s | %s | %s" % (meta.get((p, "process_sort_index"), "-"), p,
                                      meta.get((p, "process_labels"), "-"),
                                      meta.get((p, "process_name"), "-"), " ".join(names)))
    for line in sorted(out_flows):
        print(line)


main()
