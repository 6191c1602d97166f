#!/usr/bin/env python3
"""Every Rust example of README.md and docs/*.md is code CI runs.

Each ```rust block's visible lines (those rustdoc shows: not `# ...`),
in the runs between hidden lines, must be in the example file that runs
them, whitespace aside: examples/docs.rs, or the file an
`<!-- example: PATH -->` line just before the block names. The examples
themselves run in CI, so a documented example that no longer compiles or
no longer works fails CI, not a reader.

Exits 1 naming every block that is not in its file.
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
DEFAULT = "examples/docs.rs"


def squeezed(text):
    return "".join(text.split())


def blocks(path):
    """(first line, example file, runs of visible lines) of each rust block."""
    lines = path.read_text().splitlines()
    found = []
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = re.match(r"^```rust\b", line.strip())
        if not fence:
            index += 1
            continue
        example = DEFAULT
        if index > 0:
            named = re.match(r"^<!-- example: (\S+) -->$", lines[index - 1].strip())
            if named:
                example = named.group(1)
        start = index + 1
        runs, current = [], []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            text = lines[index]
            hidden = text.lstrip().startswith("# ") or text.strip() == "#"
            if hidden:
                if current:
                    runs.append(current)
                current = []
            elif text.strip():
                current.append(text)
            index += 1
        if current:
            runs.append(current)
        found.append((start, example, runs))
        index += 1
    return found


problems = []
checked = 0
for document in ["README.md"] + sorted(str(p.relative_to(root)) for p in (root / "docs").glob("*.md")):
    for start, example, runs in blocks(root / document):
        checked += 1
        source = root / example
        if not source.exists():
            problems.append(f"{document}:{start}: names {example}, which does not exist")
            continue
        text = squeezed(source.read_text())
        for run in runs:
            if squeezed("\n".join(run)) not in text:
                problems.append(f"{document}:{start}: these lines are not in {example}: {run[0].strip()} ...")
                break

for problem in problems:
    print(problem)
print(f"doc examples: {checked} blocks, {len(problems)} not in the code CI runs")
sys.exit(1 if problems else 0)
