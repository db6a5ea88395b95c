#!/usr/bin/python3
"""The layering test: includes across src/ follow target_link_libraries.

Every library exports src/ as one include root, so an include of another
directory's header compiles whether or not the library links that
directory's library. This test holds the includes to the links: each
`#include "<dir>/..."` in a non-test file src/<own>/... (every .h and .cc
but *_test.cc) must name <own> or a directory that <own>'s libraries link,
as the table derived from src/CMakeLists.txt says (src/layering.cmake writes
it at configure time). It also fails when the directories' links form a
cycle, so dependencies point one way.

Usage: layering_test.py --table BUILD/layering_table.txt --src SRC_DIR
A dependency that is meant is added to target_link_libraries in
src/CMakeLists.txt (and the layering in docs/design.md); the table follows.
"""

import argparse
import collections
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]*"', re.MULTILINE)


def read_table(path):
    """{dir: {other: "target -> linked"}} from layering.cmake's lines."""
    allowed = collections.defaultdict(dict)
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        own, other, target, linked = line.split()
        allowed[own].setdefault(other, f"{target} -> {linked}")
    return allowed


def find_cycle(allowed):
    """A list of directories that form a cycle, or None."""
    state = {}  # 1: on the path, 2: done
    path = []

    def visit(d):
        state[d] = 1
        path.append(d)
        for o in sorted(allowed.get(d, {})):
            if state.get(o) == 1:
                return path[path.index(o):] + [o]
            if o not in state:
                found = visit(o)
                if found:
                    return found
        path.pop()
        state[d] = 2
        return None

    for d in sorted(allowed):
        if d not in state:
            found = visit(d)
            if found:
                return found
    return None


def wrong_includes(src, allowed):
    """(file, include, own) for each include of a directory `own` may not."""
    dirs = {p.name for p in src.iterdir() if p.is_dir()}
    found = []
    for own in sorted(dirs):
        for f in sorted((src / own).rglob("*")):
            if f.suffix not in (".h", ".cc") or f.name.endswith("_test.cc"):
                continue
            for m in INCLUDE.finditer(f.read_text()):
                other = m.group(1)
                if other in dirs and other != own and other not in allowed[own]:
                    line = m.group(0).strip()
                    found.append((f.relative_to(src.parent), line, own))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", required=True)
    ap.add_argument("--src", required=True)
    args = ap.parse_args()
    src = pathlib.Path(args.src)
    allowed = read_table(args.table)
    if not allowed:
        print(f"{args.table}: empty; src/layering.cmake found no links")
        return 1

    failed = False
    for f, line, own in wrong_includes(src, allowed):
        may = ", ".join(sorted(allowed[own]))
        may = f"only {may}" if may else "no other src/ directory"
        print(f"{f}: {line}: src/{own} may include {may} "
              f"(what its libraries link in src/CMakeLists.txt)")
        failed = True
    cycle = find_cycle(allowed)
    if cycle:
        steps = [f"{a} ({allowed[a][b]})" for a, b in zip(cycle, cycle[1:])]
        print("the links of src/ directories form a cycle: " +
              " -> ".join(steps) + f" -> {cycle[-1]}")
        failed = True

    print("Layering (src/<dir>: the directories it may include):")
    for own in sorted(allowed):
        print(f"  {own}: {' '.join(sorted(allowed[own]))}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
