"""Room sizes: modules under simstudy/ over 400 lines and functions over 60 lines.

Prints one JSON object: the limits, the largest module and function, and every module and
function over the given sizes (path, name, lines), largest first. Exit status 0 either way:
sizes are a report, and a file is split where its concepts part, not where a number falls.

    python benchmarks/sizes.py [--modules 400] [--functions 60]
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "simstudy"


def measure(root: Path = ROOT) -> tuple[list[tuple[str, int]], list[tuple[str, str, int]]]:
    """Lines per module, and lines per function or method (decorators and docstring included)."""
    modules, functions = [], []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(root.parent))
        modules.append((rel, len(text.splitlines())))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                functions.append((rel, node.name, node.end_lineno - start + 1))
    return modules, functions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--functions", type=int, default=60)
    args = parser.parse_args()
    modules, functions = measure()
    big_modules = sorted((m for m in modules if m[1] > args.modules), key=lambda m: -m[1])
    big_functions = sorted((f for f in functions if f[2] > args.functions), key=lambda f: -f[2])
    print(json.dumps({
        "module_limit": args.modules, "function_limit": args.functions,
        "largest_module": max(modules, key=lambda m: m[1]),
        "largest_function": max(functions, key=lambda f: f[2]),
        "modules_over": big_modules, "functions_over": big_functions}, indent=1))


if __name__ == "__main__":
    main()
