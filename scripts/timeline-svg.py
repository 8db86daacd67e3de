#!/usr/bin/python3
"""A picture of a --timeline trace: a row per process, in the trace's sort
order (each right below its parent, indented), a bar per program it ran,
coloured by the phases within it (translate, run, kernel, qemu); if there
are more than ROWS, the ROWS that took the most CPU and their ancestors.

Usage: timeline-svg.py TRACE.json OUT.svg [ROWS]  (default 40 rows)

It reads what any consumer of the Trace Event Format reads: process_name,
process_sort_index, complete events (X) with their cat and args.
"""
import json
import sys
from xml.sax.saxutils import escape

COLOURS = {"translate": "#e4572e", "run": "#4c9f70", "kernel": "#7b7f9e",
           "qemu": "#f3a712"}


def main():
    trace = json.load(open(sys.argv[1]))
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    names, order, progs, phases, parent = {}, {}, {}, {}, {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            names[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "process_labels":
            # "parent PROGRAM (PID)"
            parent[e["pid"]] = int(e["args"]["labels"].rsplit("(", 1)[1].rstrip(")"))
        elif e["ph"] == "M" and e["name"] == "process_sort_index":
            order[e["pid"]] = e["args"]["sort_index"]
        elif e["ph"] == "X" and e.get("cat") == "program":
            progs.setdefault(e["pid"], []).append(e)
        elif e["ph"] == "X" and e.get("cat") == "phase":
            phases.setdefault(e["pid"], []).append(e)
    cpu = {p: sum(e["args"].get("cpu_ms", 0) for e in v) for p, v in progs.items()}
    keep = set(sorted(cpu, key=lambda p: -cpu[p])[:rows])
    for p in list(keep):
        while parent.get(p) in progs and parent[p] not in keep:
            p = parent[p]
            keep.add(p)
    keep = sorted(keep, key=lambda p: order.get(p, 1 << 30))

    def depth(p):
        d = 0
        while parent.get(p) in progs and d < 20:
            p, d = parent[p], d + 1
        return d
    end = max(e["ts"] + e["dur"] for v in progs.values() for e in v)
    width, label_w, row_h, top = 1400, 520, 16, 40
    scale = (width - label_w - 20) / end
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="monospace" font-size="11">'
           % (width, top + row_h * len(keep) + 40),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="18" font-size="13">%s: %d of %d processes (the most CPU, '
           'and their parents), %.1f s</text>' % (escape(sys.argv[1].split("/")[-1]), len(keep), len(progs),
                              end / 1e6)]
    for i, pid in enumerate(keep):
        y = top + i * row_h
        d = depth(pid)
        label = names.get(pid, str(pid))
        label = label if len(label) + 2 * d <= 70 else label[:67 - 2 * d] + "..."
        out.append('<text x="%d" y="%d">%s</text>' % (6 + 13 * d, y + 11, escape(label)))
        for e in progs[pid]:
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="#dddddd" '
                       'stroke="#999999" stroke-width="0.5"><title>%s</title></rect>'
                       % (label_w + e["ts"] * scale, y + 1, max(e["dur"] * scale, 0.5),
                          row_h - 2, escape(e["args"].get("command", e["name"]))))
        for e in phases.get(pid, []):
            out.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"/>'
                       % (label_w + e["ts"] * scale, y + 3, max(e["dur"] * scale, 0.5),
                          row_h - 6, COLOURS.get(e["name"], "black")))
    y = top + row_h * len(keep) + 20
    for k, (name, colour) in enumerate(COLOURS.items()):
        out.append('<rect x="%d" y="%d" width="12" height="10" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>' % (label_w + k * 110, y, colour,
                                                      label_w + k * 110 + 16, y + 9, name))
    out.append('</svg>')
    open(sys.argv[2], "w").write("\n".join(out) + "\n")


main()
