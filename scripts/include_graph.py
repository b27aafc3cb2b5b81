#!/usr/bin/env python3
"""The include graph of host-backend/ by module, failing on a loop.

A module is a header with the sources that implement it: in one folder,
`x.h`, `x.c` and every `x_*.c` / `x_*.h` (the shortest such prefix that has
a header wins: core/exec_memory.c and core/exec_internal.h are module
core/exec; remote/forward_d2h.c is remote/forward). A file with no header of
its name is a module of its own (host-backend/mearasd.c, remote/reap.c).
Module A depends on module B when a file of A includes a header of B
(`#include "..."`, found next to the including file, in a folder above it,
or from host-backend/; system, generated and other projects' headers are
not part of the graph).

An include loop is a cycle of modules: a header whose sources include a
header that, through its own sources, includes the first (the old god
header did this: worker.h declared the poller, exec and the remote
forwarder, which all included worker.h). Exit status 1 on a loop, with
the loop printed; 0 otherwise.

    scripts/include_graph.py [--root DIR] [--list] [--folders]

--list prints every module and what it depends on; --folders prints the
dependencies between the folders (subsystems) too, for reading only.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def module_of(path: Path, root: Path) -> str:
    """The module a file belongs to, as a path from root without suffix."""
    parts = path.stem.split("_")
    for n in range(1, len(parts) + 1):
        head = path.parent / ("_".join(parts[:n]) + ".h")
        if head.exists():
            return str(head.relative_to(root).with_suffix(""))
    return str(path.relative_to(root).with_suffix(""))


def resolve(name: str, including: Path, root: Path) -> Path | None:
    """The file an #include "name" in `including` finds inside root, if any."""
    base = including.parent
    while True:
        cand = (base / name).resolve()
        if cand.is_file() and root in cand.parents:
            return cand
        if base == root or root not in base.parents:
            return None
        base = base.parent


def build(root: Path) -> dict[str, set[str]]:
    """Module -> the modules it depends on."""
    graph: dict[str, set[str]] = {}
    for f in sorted(root.rglob("*")):
        if f.suffix not in (".c", ".h") or not f.is_file():
            continue
        mod = module_of(f, root)
        deps = graph.setdefault(mod, set())
        for name in INCLUDE.findall(f.read_text(errors="replace")):
            target = resolve(name, f, root)
            if target is None:
                continue
            dep = module_of(target, root)
            if dep != mod:
                deps.add(dep)
                graph.setdefault(dep, set())
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp: list[str] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def one_cycle(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """A loop through the component's first module, as a list of modules."""
    members = set(comp)
    start = comp[0]
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start] + path[::-1][1:] + [start] if len(path) > 1 else [start, start]
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return comp


def folder_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    def folder(mod: str) -> str:
        return mod.split("/")[0] if "/" in mod else "."

    out: dict[str, set[str]] = {}
    for mod, deps in graph.items():
        out.setdefault(folder(mod), set()).update(folder(d) for d in deps if folder(d) != folder(mod))
    return out


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description="host-backend's include graph by module; fails on a loop")
    ap.add_argument("--root", type=Path, default=here / "host-backend")
    ap.add_argument("--list", action="store_true", help="print every module and its dependencies")
    ap.add_argument("--folders", action="store_true", help="print the dependencies between folders")
    args = ap.parse_args(argv)
    root: Path = args.root.resolve()
    if not root.is_dir():
        print(f"include_graph: {root} is not a directory", file=sys.stderr)
        return 2
    graph = build(root)
    if args.list:
        for mod in sorted(graph):
            print(f"{mod} -> {' '.join(sorted(graph[mod])) or '-'}")
    if args.folders:
        for fold, deps in sorted(folder_edges(graph).items()):
            print(f"[{fold}] -> {' '.join(sorted(deps)) or '-'}")
    loops = strongly_connected(graph)
    edges = sum(len(d) for d in graph.values())
    for comp in loops:
        print("include loop: " + " -> ".join(one_cycle(graph, comp)))
    if loops:
        print(f"{len(graph)} modules, {edges} dependencies, {len(loops)} include loop(s)")
        return 1
    print(f"{len(graph)} modules, {edges} dependencies, no include loop")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
