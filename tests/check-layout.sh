#!/usr/bin/env bash
# check-layout.sh -- the layout rules of issue 11, checked on the sources
# alone (no build products), from the repository root or anywhere else:
#
#  1. sim/ is the core: a quoted #include in sim/*.c or sim/*.h must name a
#     header inside sim/ (system headers <...> are fine).  The subsystems
#     above it (workloads/, calib/, lua/, plots/) and the front end (cli/)
#     reach sim/, never the reverse.
#  2. No include cycle between modules.  A module is a basename x with x.c
#     and/or x.h in any top-level source directory (sim/, workloads/,
#     calib/, lua/, cli/, plots/, tests/ and any added later; build outputs
#     and hidden directories aside); x depends on y when x.c or x.h includes
#     y.h.  A cycle is printed as "a -> b -> ... -> a" with the includes
#     that close it.
#
# Prints "layout: ok" and exits 0, or names every violation and exits 1.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec python3 - "$@" <<'PY'
import os, re, sys

# every top-level directory but build outputs and hidden ones
DIRS = sorted(d for d in os.listdir(".") if os.path.isdir(d) and not d.startswith((".", "build")))
INC = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

def includes(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = INC.match(line)
            if m:
                out.append(m.group(1))
    return out

def sources(d):
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, n) for n in os.listdir(d)
                  if n.endswith((".c", ".h")) and os.path.isfile(os.path.join(d, n)))

bad = []

# 1. sim/ includes only sim/
sim_dir = os.path.realpath("sim")
for path in sources("sim"):
    for inc in includes(path):
        target = os.path.realpath(os.path.join("sim", inc))
        if os.path.dirname(target) != sim_dir or not os.path.isfile(target):
            bad.append('%s: includes "%s", which is not a header in sim/ (sim/ is the core: it sees '
                       'only its own headers; subsystems plug in through policy.h and workload.h)' % (path, inc))

# 2. the module graph
modules = {}
for d in DIRS:
    for path in sources(d):
        name = os.path.splitext(os.path.basename(path))[0]
        modules.setdefault(name, []).append(path)

deps = {m: {} for m in modules}    # module -> {dependency: the file whose include makes it}
for m, paths in modules.items():
    for path in paths:
        for inc in includes(path):
            base = os.path.basename(inc)
            if not base.endswith(".h"):
                continue
            y = base[:-2]
            if y != m and y in modules and y not in deps[m]:
                deps[m][y] = "%s includes \"%s\"" % (path, inc)

# depth-first search; each back edge closes one cycle, reported once
WHITE, GREY, BLACK = 0, 1, 2
state = {m: WHITE for m in modules}
stack, cycles, seen = [], [], set()

def visit(m):
    state[m] = GREY
    stack.append(m)
    for y in sorted(deps[m]):
        if state[y] == GREY:
            cyc = stack[stack.index(y):] + [y]
            key = frozenset(cyc)
            if key not in seen:
                seen.add(key)
                cycles.append(cyc)
        elif state[y] == WHITE:
            visit(y)
    stack.pop()
    state[m] = BLACK

sys.setrecursionlimit(10000)
for m in sorted(modules):
    if state[m] == WHITE:
        visit(m)

for cyc in cycles:
    why = "; ".join(deps[a][b] for a, b in zip(cyc, cyc[1:]))
    bad.append("include cycle: %s  (%s)" % (" -> ".join(cyc), why))

if bad:
    for b in bad:
        print("layout: " + b)
    print("layout: %d problem%s" % (len(bad), "" if len(bad) == 1 else "s"))
    sys.exit(1)
print("layout: ok")
PY
