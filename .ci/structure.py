#!/usr/bin/env python3
"""The structure figures a wave reached, kept: they regrow otherwise.

- every Rust source file in src/, layers/src, cli/src and gateway/src at most 400 *code*
  lines: blank lines, comments and `#[cfg(test)]` items are not counted, so
  documentation is never trimmed to fit (docs/ARCHITECTURE.md says why);
- no function in cli/src over 80 lines (its tests aside);
- at most 2 files at src/ root (lib.rs and the error module's);
- the test targets `cargo metadata` lists are exactly those the table in
  docs/ARCHITECTURE.md names, and at most 8;
- README.md at most 2,500 words;
- no MCP method name written as a string literal, and no `methods::` name
  compared (`==`, `!=`, a match arm, `matches!`), outside src/protocol/
  (src/ and cli/src; comments aside): requests and notifications have kinds;
- at most 60 public methods on `Session` + `McpClient` + `ServerGroup`;
- `McpClient` holds at most 2 locks;
- one lock-poisoning policy: no `.lock().expect(` or `.lock().unwrap()`
  outside tests.

Exits 1 with every figure that does not hold.
"""
import json
import pathlib
import re
import subprocess
import sys

MAX_CODE_LINES = 400
MAX_CLI_FUNCTION_LINES = 80
MAX_ROOT_FILES = 2
MAX_TARGETS = 8
MAX_README_WORDS = 2500
MAX_FACADE_METHODS = 60
MAX_CLIENT_LOCKS = 2

root = pathlib.Path(__file__).resolve().parent.parent
problems = []
SOURCES = ["src", "layers/src", "cli/src", "gateway/src"]


def sources(bases):
    for base in bases:
        for path in sorted((root / base).rglob("*.rs")):
            yield path.relative_to(root).as_posix(), path.read_text()


def strip_comments(text):
    """The text with comments blanked (line structure kept); string
    literals are left as they are, as far as a line-based reader can."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("//"):
            out.append("")
        else:
            # A trailing comment, when no string literal could hold the `//`.
            if "//" in line and '"' not in line:
                line = line[: line.index("//")]
            out.append(line)
    return out


def block_end(lines, start):
    """The index of the line closing the block that opens at or after
    `start` (braces counted, comments already blanked)."""
    depth = 0
    opened = False
    for index in range(start, len(lines)):
        line = re.sub(r'"(\\.|[^"\\])*"', '""', lines[index])
        line = re.sub(r"'(\\.|[^'\\])'", "''", line)
        for char in line:
            if char == "{":
                depth += 1
                opened = True
            elif char == "}":
                depth -= 1
        if opened and depth <= 0:
            return index
        if not opened and line.rstrip().endswith(";"):
            return index
    return len(lines) - 1


def without_tests(lines):
    """The lines with every `#[cfg(test)]` item blanked."""
    lines = list(lines)
    index = 0
    while index < len(lines):
        if re.match(r"\s*#\[cfg\(test\)\]", lines[index]):
            end = block_end(lines, index + 1)
            for blank in range(index, end + 1):
                lines[blank] = ""
            index = end
        index += 1
    return lines


def code_lines(text):
    return sum(1 for line in without_tests(strip_comments(text)) if line.strip())


for relative, text in sources(SOURCES):
    count = code_lines(text)
    if count > MAX_CODE_LINES:
        problems.append(f"{relative}: {count} code lines (at most {MAX_CODE_LINES})")

for relative, text in sources(["cli/src"]):
    lines = without_tests(strip_comments(text))
    for index, line in enumerate(lines):
        found = re.match(r"\s*(pub(\([a-z]+\))? )?(async )?fn (\w+)", line)
        if not found:
            continue
        end = block_end(lines, index)
        length = end - index + 1
        if length > MAX_CLI_FUNCTION_LINES:
            problems.append(f"{relative}:{index + 1}: fn {found.group(4)} is {length} lines "
                            f"(at most {MAX_CLI_FUNCTION_LINES})")

root_files = sorted(p.name for p in (root / "src").iterdir() if p.is_file())
if len(root_files) > MAX_ROOT_FILES:
    problems.append(f"src/ root holds {root_files} (at most {MAX_ROOT_FILES} files)")

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
COMPARED = re.compile(r"(==|!=)\s*(\w+::)*methods::[A-Z_]+|(\w+::)*methods::[A-Z_]+\s*(==|!=|=>|\|)"
                      r"|matches!\(.*methods::")
for relative, text in sources(["src", "cli/src", "gateway/src"]):
    if relative.startswith("src/protocol/"):
        continue
    for number, line in enumerate(strip_comments(text), 1):
        for method in methods:
            if f'"{method}"' in line:
                problems.append(f"{relative}:{number}: the method name \"{method}\" "
                                "written out (use a request's kind)")
        if COMPARED.search(line):
            problems.append(f"{relative}:{number}: a method name compared "
                            "(ask the request's kind)")

facade = {}
for relative, text in sources(["src"]):
    depth = 0
    owner = None
    for line in strip_comments(text):
        stripped = line.strip()
        opened = re.match(r"impl(<[^>]*>)?\s+(Session|McpClient|ServerGroup)(<[^>]*>)?\s*\{", stripped)
        if depth == 0 and opened:
            owner = opened.group(2)
        if owner and depth == 1:
            method = re.match(r"pub (async )?fn (\w+)", stripped)
            if method:
                facade.setdefault(owner, []).append(method.group(2))
        depth += line.count("{") - line.count("}")
        if depth == 0:
            owner = None
public_methods = sum(len(names) for names in facade.values())
if public_methods > MAX_FACADE_METHODS:
    shares = ", ".join(f"{owner} {len(names)}" for owner, names in sorted(facade.items()))
    problems.append(f"{public_methods} public methods on the facades ({shares}; "
                    f"at most {MAX_FACADE_METHODS})")

client = "\n".join(strip_comments((root / "src/client/mod.rs").read_text()))
inner = re.search(r"\nstruct Inner \{(.*?)\n\}", client, re.S)
locks = len(re.findall(r":\s*[\w:]*(Mutex|RwLock)<", inner.group(1))) if inner else 0
if not inner:
    problems.append("src/client/mod.rs: no `struct Inner` to count McpClient's locks in")
elif locks > MAX_CLIENT_LOCKS:
    problems.append(f"McpClient holds {locks} locks (at most {MAX_CLIENT_LOCKS})")

for relative, text in sources(SOURCES):
    text = "\n".join(without_tests(strip_comments(text)))
    for found in re.finditer(r"\.lock\(\)\s*\.(expect|unwrap)\(", text):
        number = text.count("\n", 0, found.start()) + 1
        problems.append(f"{relative}:{number}: a poisoned lock is taken as it is "
                        "(.unwrap_or_else(PoisonError::into_inner))")

for problem in problems:
    print(problem)
print(f"structure: {len(targets)} test targets, README {words} words, "
      f"{public_methods} facade methods, McpClient {locks} locks, "
      f"{len(problems)} problem(s)")
sys.exit(1 if problems else 0)
