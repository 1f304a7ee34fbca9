"""MkDocs hooks: the generated reference pages and the measured results kept beside the code.

``reference/cli.md`` and ``reference/documents.md`` are written at build time from the command
parsers and the document models (``docs/gen_reference.py``); the benchmark result files under
``benchmarks/`` are served as pages under ``results/`` without copies in the repository.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_reference  # noqa: E402


def on_files(files: Files, config) -> Files:
    for uri, text in gen_reference.reference_pages().items():
        files.append(File.generated(config, uri, content=text))
    for path in sorted((ROOT / "benchmarks").glob("*_RESULTS.md")):
        files.append(File.generated(config, f"results/{path.name}", content=path.read_text()))
    return files
