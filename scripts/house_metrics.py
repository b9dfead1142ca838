"""The shape of the code in numbers: modules, lines of code and of tests, import cycles and the longest import chain.

    python scripts/house_metrics.py [--root DIR] [--json]

Reads the imports of ``rageval/`` and ``ui/`` as text (``ast``; every ``import`` and ``from ... import`` at any
depth, lazy ones inside functions too, and ``TYPE_CHECKING`` ones left out), so it needs nothing installed. A cycle
is a strongly connected component of the module graph with more than one module; the longest chain is the longest
path in the graph of those components (each counted once). Used for the before -> after of issue 30.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

PACKAGES = ("rageval", "ui")


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported_modules(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """Absolute names of the modules ``tree`` imports (``from a import b`` names ``a.b`` as well, resolved later)."""
    found: set[str] = set()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if _type_checking_block(node):
            skip.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(root: Path) -> tuple[dict[str, set[str]], dict[str, Path]]:
    files = {module_name(root, p): p for package in PACKAGES for p in (root / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = imported_modules(tree, name, path.name == "__init__.py")
        graph[name] = {t for t in targets if t in files and t != name}
    return graph, files


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def longest_chain(graph: dict[str, set[str]], components: list[list[str]]) -> list[str]:
    """The longest import path over the condensed graph (one module named per component)."""
    owner = {m: i for i, c in enumerate(components) for m in c}
    edges = {i: {owner[t] for m in c for t in graph[m]} - {i} for i, c in enumerate(components)}
    best: dict[int, list[int]] = {}

    def chain(i: int) -> list[int]:
        if i not in best:
            tails = [chain(j) for j in edges[i]]
            best[i] = [i] + max(tails, key=len, default=[])
        return best[i]

    sys.setrecursionlimit(10_000)
    path = max((chain(i) for i in edges), key=len, default=[])
    return [components[i][0] for i in path]


def count_lines(paths) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)


def metrics(root: Path) -> dict:
    graph, files = import_graph(root)
    components = strongly_connected(graph)
    cycles = [c for c in components if len(c) > 1]
    chain = longest_chain(graph, components)
    tests = list((root / "tests").rglob("*.py"))
    return {
        "modules": len(files),
        "code_lines": count_lines(files.values()) + count_lines((root / "app_pages").glob("*.py")),
        "test_files": len([p for p in tests if p.name.startswith("test_")]),
        "test_lines": count_lines(tests),
        "import_cycles": len(cycles),
        "cycles": cycles,
        "longest_chain_length": len(chain),
        "longest_chain": chain,
        "developers_md_lines": count_lines([root / "DEVELOPERS.md"]) if (root / "DEVELOPERS.md").exists() else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = metrics(args.root)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for key, value in result.items():
        if key == "cycles":
            for cycle in value:
                print(f"  cycle: {' <-> '.join(cycle)}")
        elif key == "longest_chain":
            print(f"  chain: {' -> '.join(value)}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
