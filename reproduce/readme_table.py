#!/usr/bin/env python3
"""readme_table.py -- regenerates the case tables of reproduce/README.md
("Cases by chapter") from `servesim reproduce all --json OUT`.

    ./servesim reproduce all --json /tmp/r.json
    python3 reproduce/readme_table.py /tmp/r.json reproduce/README.md

Everything from the line "#### Seed 000" to the end of the file is
replaced; the rest of the README is left as it is.
"""
import json
import sys

SEEDS = [("000", "#### Seed 000 — chapter 31 (efficient serving)"),
         ("002", "#### Seed 002 — the serving problem"),
         ("003", "#### Seed 003 — chapter 8 (inference optimisation)")]


def num(v):
    # whole numbers in full (a byte count), the rest as %g, as servesim prints them
    return "%d" % v if v == int(v) and abs(v) < 1e15 else "%g" % v


def row(c):
    where = c["source"].split(", ", 1)[1].split("; input:")[0]
    book = "%s %s" % (num(c["book"]), c["unit"])
    if c["status"] == "pending":
        comp, inp = "", "pending: " + c["pending"].split(" (")[0].split(":")[0]
    else:
        comp, inp = num(c["computed"]), c["input"].rsplit("/", 1)[-1]
    tol = {"within": "±" + num(c["tolerance"]), "at_most": "≤ book", "at_least": "≥ book"}.get(c["compare"])
    if tol is None:
        sys.exit("readme_table.py: %s: unknown compare \"%s\"" % (c["name"], c["compare"]))
    return "| `%s` | %s | %s | %s | %s | %s |" % (c["name"], where, book, comp, tol, inp)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: readme_table.py REPORT.json README.md")
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    text = open(sys.argv[2], encoding="utf-8").read()
    at = text.find(SEEDS[0][1])
    if at < 0:
        sys.exit("readme_table.py: %s: no line \"%s\"" % (sys.argv[2], SEEDS[0][1]))
    out = [text[:at].rstrip("\n") + "\n"]
    for seed, head in SEEDS:
        out += ["", head, "", "| case | where | book | computed | tolerance | input |",
                "|---|---|---:|---:|---|---|"]
        out += [row(c) for c in doc["cases"] if c["source"].startswith("seed %s," % seed)]
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(out[0] + "\n".join(out[1:]) + "\n")


if __name__ == "__main__":
    main()
