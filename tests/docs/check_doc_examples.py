#!/usr/bin/env python3
"""Keeps the guides' code blocks equal to the examples they come from.

An example marks a region with comment lines of its own:

    // [doc:NAME]
    ...code...
    // [doc:end]

and a guide in docs/ shows it between

    <!-- example: examples/FILE.cpp NAME -->
    ```cpp
    ...code...
    ```
    <!-- end example -->

The block must be the region's lines, with their common indentation removed. The check fails
(exit 1), showing a diff, when a block differs, names a missing file or region, or is not
closed; a region marked twice or left open is an error too. With --fix the blocks are rewritten
from the examples instead.

    python3 tests/docs/check_doc_examples.py [--root DIR] [--fix]
    python3 tests/docs/check_doc_examples.py --self-test
"""

import argparse
import difflib
import pathlib
import re
import sys
import tempfile
import textwrap

REGION_START = re.compile(r"^\s*// \[doc:([A-Za-z0-9_]+)\]\s*$")
REGION_END = re.compile(r"^\s*// \[doc:end\]\s*$")
BLOCK_START = re.compile(r"^<!-- example: (\S+) ([A-Za-z0-9_]+) -->\s*$")
BLOCK_END = re.compile(r"^<!-- end example -->\s*$")
FENCE = "```"


class CheckError(Exception):
    pass


def read_regions(path):
    """Returns {name: code} for the regions of one example file."""
    regions = {}
    open_name, open_line, body = None, 0, []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if REGION_END.match(line):
            if open_name is None:
                raise CheckError(f"{path}:{number}: [doc:end] without a region open")
            regions[open_name] = textwrap.dedent("\n".join(body)).strip("\n") + "\n"
            open_name, body = None, []
            continue
        start = REGION_START.match(line)
        if start:
            if open_name is not None:
                raise CheckError(f"{path}:{number}: region '{start.group(1)}' starts inside '{open_name}'")
            if start.group(1) in regions:
                raise CheckError(f"{path}:{number}: region '{start.group(1)}' is marked twice")
            open_name, open_line = start.group(1), number
            continue
        if open_name is not None:
            body.append(line)
    if open_name is not None:
        raise CheckError(f"{path}:{open_line}: region '{open_name}' is never closed with [doc:end]")
    return regions


def render(language, code):
    return f"{FENCE}{language}\n{code}{FENCE}\n"


def process(doc, root, cache, fix):
    """Checks (or, with fix, rewrites) one markdown file; returns the list of problems."""
    lines = doc.read_text().splitlines(keepends=True)
    out, problems, i = [], [], 0
    while i < len(lines):
        start = BLOCK_START.match(lines[i])
        if not start:
            out.append(lines[i])
            i += 1
            continue
        source, name = start.group(1), start.group(2)
        end = next((j for j in range(i + 1, len(lines)) if BLOCK_END.match(lines[j])), None)
        if end is None:
            raise CheckError(f"{doc}:{i + 1}: '<!-- example: {source} {name} -->' has no '<!-- end example -->'")
        current = "".join(lines[i + 1 : end])
        path = root / source
        if not path.is_file():
            raise CheckError(f"{doc}:{i + 1}: {source} does not exist")
        if path not in cache:
            cache[path] = read_regions(path)
        if name not in cache[path]:
            raise CheckError(f"{doc}:{i + 1}: {source} has no region '{name}'")
        language = "cpp" if path.suffix in (".cpp", ".h", ".cu") else ""
        wanted = render(language, cache[path][name])
        if current != wanted:
            problems.append(
                f"{doc}:{i + 1}: the block of {source} '{name}' differs from the example:\n"
                + "".join(difflib.unified_diff(current.splitlines(True), wanted.splitlines(True), "doc", "example"))
            )
        out.append(lines[i])
        out.append(wanted)
        out.append(lines[end])
        i = end + 1
    if fix and problems:
        doc.write_text("".join(out))
    return problems


def run(root, fix):
    docs = sorted((root / "docs").glob("*.md"))
    cache, problems, blocks = {}, [], 0
    for doc in docs:
        blocks += sum(1 for line in doc.read_text().splitlines() if BLOCK_START.match(line))
        problems += process(doc, root, cache, fix)
    return blocks, problems


def self_test():
    """The check on a small tree of its own: passes when equal, fails when not, --fix mends."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "examples").mkdir()
        (root / "docs").mkdir()
        (root / "examples" / "a.cpp").write_text(
            "int main() {\n  // [doc:body]\n  int x = 1;\n  return x;\n  // [doc:end]\n}\n"
        )
        good = "text\n<!-- example: examples/a.cpp body -->\n```cpp\nint x = 1;\nreturn x;\n```\n<!-- end example -->\n"
        (root / "docs" / "g.md").write_text(good)
        assert run(root, False) == (1, []), "an equal block was reported"
        (root / "docs" / "g.md").write_text(good.replace("int x = 1;", "int x = 2;"))
        blocks, problems = run(root, False)
        assert len(problems) == 1, "a changed block was not reported"
        run(root, True)
        assert (root / "docs" / "g.md").read_text() == good, "--fix did not restore the block"
        (root / "docs" / "g.md").write_text(good.replace("body", "nope", 1))
        try:
            run(root, False)
            raise AssertionError("a missing region was not reported")
        except CheckError:
            pass
    print("self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[2])
    parser.add_argument("--fix", action="store_true", help="rewrite the blocks in docs/ from the examples")
    parser.add_argument("--self-test", action="store_true", help="check the checker on a tree of its own")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    try:
        blocks, problems = run(args.root.resolve(), args.fix)
    except CheckError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(p, file=sys.stderr)
    if problems and args.fix:
        print(f"rewrote {len(problems)} of {blocks} example blocks in docs/")
        return 0
    if problems:
        print(f"{len(problems)} of {blocks} example blocks differ; run with --fix to rewrite them", file=sys.stderr)
        return 1
    print(f"{blocks} example blocks match their examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
