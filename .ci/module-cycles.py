#!/usr/bin/env python3
"""Fails when modules of a crate depend on each other in a cycle.

For every module directory (the crate root included) it builds a graph
between the modules directly inside it: A -> B when a file under A names
`crate::...::B` (or `super::B` from A's level). Edges between a parent and
its own children are not counted (a `mod.rs` declares its children, and
children use their parent's items); every other cycle is reported. Test
modules (`#[cfg(test)] mod tests` bodies) are skipped.

Usage: module-cycles.py SRC_DIR [SRC_DIR ...]
"""
import os
import re
import sys

PATH = re.compile(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*)\};", re.S)


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def strip_tests(text):
    # Drop everything from a `#[cfg(test)]` module to the end of the file:
    # unit tests sit last by convention here.
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s+\w+\s*\{", text)
    return text[: m.start()] if m else text


def references(text):
    for m in USE_GROUP.finditer(text):
        base = m.group(2).split("::")[1:]
        for item in re.split(r",", m.group(3)):
            item = item.strip().split(" as ")[0].strip()
            if item and item[0].isalpha():
                yield m.group(1), base + item.split("::")[0:1]
    for m in PATH.finditer(text):
        yield m.group(1), m.group(2).split("::")[1:]


def analyse(src):
    modules = set()
    files = []
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(root, name)
                mod = module_of(src, path)
                if os.path.basename(root) == "bin" or name == "main.rs" and root == src:
                    continue
                modules.add(mod)
                files.append((path, mod, name in ("mod.rs", "lib.rs")))
    # every prefix of a module is a module too
    for mod in list(modules):
        for i in range(len(mod)):
            modules.add(mod[:i])
    # `pub use a::b::{C, D};` in a module makes `module::C` mean `a::b`
    reexports = {}
    for path, mod, is_dir in files:
        if not is_dir:
            continue
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"pub(?:\(crate\))? use ((?:self::|crate::)?[a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*)::(\{[^;]*\}|[A-Za-z_][A-Za-z0-9_]*);", text):
            base = m.group(1).split("::")
            if base[0] == "crate":
                origin = tuple(base[1:])
            else:
                origin = mod + tuple(b for b in base if b != "self")
            while origin and origin not in modules:
                origin = origin[:-1]
            for item in re.split(r",", m.group(2).strip("{}")):
                item = item.strip().split(" as ")[-1].strip()
                if item:
                    reexports[(mod, item)] = origin
    edges = {}
    for path, mod, is_dir in files:
        text = strip_tests(open(path, encoding="utf-8").read())
        text = re.sub(r"//[^\n]*", "", text)
        here = mod if is_dir else mod[:-1]  # the module `super` is relative to
        for kind, segments in references(text):
            if kind == "crate":
                target = ()
            else:
                target = mod[:-1]
            full = list(target)
            for seg in segments:
                if tuple(full + [seg]) in modules:
                    full.append(seg)
                else:
                    break
            full = tuple(full)
            rest = segments[len(full) - len(target):]
            if rest and (full, rest[0]) in reexports:
                full = reexports[(full, rest[0])]
            # sibling edge at the level where the two paths part
            i = 0
            while i < min(len(mod), len(full)) and mod[i] == full[i]:
                i += 1
            if i == len(mod) or i == len(full):
                continue  # parent and child
            a, b = mod[: i + 1], full[: i + 1]
            edges.setdefault(a, set()).add(b)
    return edges


def cycles(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main():
    failed = False
    for src in sys.argv[1:]:
        edges = analyse(src)
        if not edges:
            print(f"{src}: no module dependencies found: wrong directory?")
            failed = True
            continue
        found = cycles(edges)
        count = sum(len(v) for v in edges.values())
        for comp in found:
            failed = True
            names = sorted("::".join(m) for m in comp)
            print(f"{src}: cycle between {', '.join(names)}")
            for a in comp:
                for b in sorted(edges.get(a, ())):
                    if b in comp:
                        print(f"    {'::'.join(a)} -> {'::'.join(b)}")
        print(f"{src}: {len(edges)} modules with dependencies, {count} edges, {len(found)} cycles")
    sys.exit(1 if failed else 0)


main()
