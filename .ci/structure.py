#!/usr/bin/env python3
"""The structure figures a wave reached, kept: they regrow otherwise.

- no source file over 500 lines in src/ (the testkit aside), layers/src,
  cli/src;
- the test targets `cargo metadata` lists are exactly those the table in
  docs/ARCHITECTURE.md names, and at most 8;
- README.md at most 2,500 words;
- no MCP method name written as a string literal outside src/protocol/
  (src/ and cli/src; comments aside): `protocol::methods` names them.

Exits 1 with every figure that does not hold.
"""
import json
import pathlib
import re
import subprocess
import sys

MAX_LINES = 500
MAX_TARGETS = 8
MAX_README_WORDS = 2500

root = pathlib.Path(__file__).resolve().parent.parent
problems = []

for base in ["src", "layers/src", "cli/src"]:
    for path in sorted((root / base).rglob("*.rs")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("src/testkit/"):
            continue
        lines = path.read_text().count("\n")
        if lines > MAX_LINES:
            problems.append(f"{relative}: {lines} lines (at most {MAX_LINES})")

metadata = json.loads(
    subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout
)
targets = sorted(
    target["name"]
    for package in metadata["packages"]
    for target in package["targets"]
    if "test" in target["kind"]
)
architecture = (root / "docs/ARCHITECTURE.md").read_text()
section = architecture.split("## Test targets", 1)[-1].split("\n## ", 1)[0]
documented = sorted(re.findall(r"^\| `([a-z_0-9]+)` \|", section, re.M))
if targets != documented:
    problems.append(f"test targets {targets} but docs/ARCHITECTURE.md names {documented}")
if len(targets) > MAX_TARGETS:
    problems.append(f"{len(targets)} test targets (at most {MAX_TARGETS})")

words = len((root / "README.md").read_text().split())
if words > MAX_README_WORDS:
    problems.append(f"README.md: {words} words (at most {MAX_README_WORDS})")

methods = re.findall(r'pub const [A-Z_]+: &str =\s*"([^"]+)";',
                     (root / "src/protocol/methods.rs").read_text())
for base in ["src", "cli/src"]:
    for path in sorted((root / base).rglob("*.rs")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith("src/protocol/"):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip().startswith("//"):
                continue
            for method in methods:
                if f'"{method}"' in line:
                    problems.append(f"{relative}:{number}: the method name \"{method}\" "
                                    "written out (use protocol::methods)")

for problem in problems:
    print(problem)
print(f"structure: {len(targets)} test targets, README {words} words, "
      f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
