#!/usr/bin/env python3
"""Doxygen's input filter for wick's headers (docs/reference/Doxyfile.in).

The headers are commented with plain // comments. This turns them into Doxygen comments on
the fly, leaving the headers as they are: the comment block that opens a file describes the
file, a comment on lines of its own describes what follows it, a comment after a declaration
on the same line describes that declaration. Characters Doxygen would read as commands or
markup (\\ @ # < > &) are escaped, and std::hash specializations are left out (Doxygen cannot
place them).
"""

import re
import sys

COMMENT = re.compile(r"^(\s*)//(?!/)\s?(.*)$")
TRAILING = re.compile(r"^(.*?[;{,)])(\s+)//(?!/)\s?(.*)$")


def escape(text):
    text = text.replace("\\", "\\\\").replace("@", "\\@").replace("#", "\\#")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def convert(lines):
    out = []
    at_top = True  # still in the comment block that opens the file
    in_hash = False
    for i, line in enumerate(lines):
        comment = COMMENT.match(line)
        if comment:
            prefix = "/// \\file\n" if at_top and not out else ""
            out.append(f"{prefix}{comment.group(1)}/// {escape(comment.group(2))}")
            continue
        at_top = False
        if re.match(r"^\s*template\s*<>\s*$", line) and i + 1 < len(lines) and "std::hash<" in lines[i + 1]:
            out.append("/// \\cond")
            in_hash = True
            out.append(line)
            continue
        trailing = TRAILING.match(line)
        if trailing and '"' not in trailing.group(1):
            out.append(f"{trailing.group(1)}{trailing.group(2)}///< {escape(trailing.group(3))}")
        else:
            out.append(line)
        if in_hash and line.startswith("};"):
            out.append("/// \\endcond")
            in_hash = False
    return out


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write("\n".join(convert(f.read().split("\n"))))
