#!/usr/bin/env python3
"""Rejects #include lines that go against the dependency order in docs/architecture.md.

The module table there ("## Modules and dependency direction") is the single source: each row names a
folder (`src/NAME` or `tools`) and, in its last column, the modules it depends on directly (comma
separated, "—" for none, "everything" for the CLI). A file under src/NAME may include headers of NAME
itself and of every module reachable through those edges; anything else is an error. Test-only code
(files named *_test.cc, *_test_util.h, *_bench.cc, or under a testing/ folder) may also include the
modules that build its fixtures (TEST_FIXTURES: checkpoint, synth, server).

A module listed in the "## Public headers" table of the same document may be included from outside its
folder only through the headers that table names (the engine's internals stay behind engine_impl.h).

Usage: check_includes.py [REPO_ROOT]   (exit 1 and one line per violation on failure)
"""
import pathlib
import re
import sys

ROW = re.compile(r"^\|\s*`(src/[a-z_]+|tools)`\s*\|.*\|\s*([^|]*?)\s*\|\s*$")
TEST_FIXTURES = {"checkpoint", "synth", "server"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"')
PUBLIC_ROW = re.compile(r"^\|\s*`([a-z_]+)`\s*\|\s*([^|]*?)\s*\|\s*$")


def read_table(doc):
    deps, in_section = {}, False
    for line in doc.read_text().splitlines():
        if line.startswith("## "):
            in_section = line.startswith("## Modules and dependency direction")
            continue
        m = ROW.match(line) if in_section else None
        if not m:
            continue
        name = m.group(1).split("/")[-1]
        column = m.group(2).strip()
        if column in ("—", "-", ""):
            deps[name] = set()
        elif column == "everything":
            deps[name] = None
        else:
            deps[name] = {d.strip().strip("`").split("/")[-1] for d in column.split(",")}
    return deps


def read_public_headers(doc):
    """{module: {"engine/engine.h", ...}} from the "## Public headers" table."""
    public, in_section = {}, False
    for line in doc.read_text().splitlines():
        if line.startswith("## "):
            in_section = line.startswith("## Public headers")
            continue
        m = PUBLIC_ROW.match(line) if in_section else None
        if m:
            public[m.group(1)] = {h.strip().strip("`") for h in m.group(2).split(",")}
    return public


def closure(deps):
    reach = {}
    everything = set(deps)

    def visit(name, stack):
        if name in reach:
            return reach[name]
        if name in stack:
            raise SystemExit(f"check_includes: dependency cycle through {' -> '.join(stack + [name])}")
        direct = deps[name]
        if direct is None:
            reach[name] = everything
            return everything
        out = {name}
        for d in direct:
            if d not in deps:
                raise SystemExit(f"check_includes: docs/architecture.md: {name} depends on unknown module '{d}'")
            out |= visit(d, stack + [name])
        reach[name] = out
        return out

    for name in deps:
        visit(name, [])
    return reach


def is_test_code(path):
    n = path.name
    return (n.endswith("_test.cc") or n.endswith("_test_util.h") or n.endswith("_bench.cc")
            or "testing" in path.parts or n.startswith("testing."))


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    deps = read_table(root / "docs" / "architecture.md")
    if not deps:
        raise SystemExit("check_includes: no module table found in docs/architecture.md")
    reach = closure(deps)
    public = read_public_headers(root / "docs" / "architecture.md")
    errors = []
    folders = [p for p in (root / "src").iterdir() if p.is_dir()] + [root / "tools"]
    for folder in folders:
        module = folder.name
        if module not in deps:
            errors.append(f"{folder.relative_to(root)}: folder is missing from docs/architecture.md's module table")
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                if target not in deps:
                    continue  # a third-party header such as "nlohmann/json.hpp"
                header = f"{target}/{m.group(2)}"
                if target != module and target in public and header not in public[target]:
                    errors.append(f"{path.relative_to(root)}:{number}: {header} is internal to {target}/ "
                                  f"(docs/architecture.md: outside it include only "
                                  f"{', '.join(sorted(public[target]))})")
                    continue
                if target in reach[module] or (is_test_code(path) and target in TEST_FIXTURES):
                    continue
                errors.append(f"{path.relative_to(root)}:{number}: {module} may not include {target}/ "
                              f"(docs/architecture.md: {module} depends on "
                              f"{', '.join(sorted(reach[module] - {module})) or 'nothing'})")
    for e in errors:
        print(e)
    if errors:
        print(f"check_includes: {len(errors)} include(s) against the dependency order", file=sys.stderr)
        return 1
    print(f"check_includes: {len(deps)} modules, includes follow docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
