#!/usr/bin/env python3
"""Checks the repository's Markdown: every relative link resolves, and so does its #anchor.

  scripts/check-links.py [--root DIR] [FILE.md ...]

Without files it checks README.md, CONTRIBUTING.md, docs/*.md, bench/results/*.md and bench/*/README.md. For each:
  - [text](path), [text](path#anchor), [text](#anchor) and reference definitions
    ([id]: path): the path (relative to the file's folder) must exist, and an anchor must be
    the slug of a heading of the target file, as GitHub makes them (lower case; characters
    other than letters, digits, '-', '_' and spaces dropped; spaces become '-'; a repeated
    slug gets -1, -2, ...). http(s) and mailto links are not fetched.
  - `libs/...`, `services/...` and other repository paths in backticks (first word of the
    span, relative to the root; '*' and '{a,b}' expand, '<placeholder>' parts are cut off):
    the path must exist.
And the newcomer path holds: README.md links docs/architecture.md, which names existing
paths under libs/ and services/. Fenced code blocks are skipped. Prints one line per dead
link (FILE:LINE: ...) and exits 1 if there is any; standard library only.
"""

import argparse
import glob
import os
import re
import sys
import unicodedata

# Top-level folders whose paths, written in backticks, must exist.
REPO_DIRS = ("libs", "services", "tools", "scripts", "tests", "bench", "config", "deploy",
             "protos", "examples", "docs", "cmake", "data")

LINK_RE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
HTML_ANCHOR_RE = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text
    text = text.replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LNM":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def lines_outside_fences(path):
    """Yields (line number, text) of the lines outside fenced code blocks."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            m = FENCE_RE.match(line)
            if m:
                if fence is None:
                    fence = m.group(1)
                    continue
                if m.group(1) == fence:
                    fence = None
                    continue
            if fence is None:
                yield number, line.rstrip("\n")


_anchor_cache = {}


def anchors(path):
    if path not in _anchor_cache:
        seen = {}
        result = set()
        for _, line in lines_outside_fences(path):
            for name in HTML_ANCHOR_RE.findall(line):
                result.add(name)
            m = HEADING_RE.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            result.add(base if n == 0 else f"{base}-{n}")
        _anchor_cache[path] = result
    return _anchor_cache[path]


# What each checked file links to and names in backticks (for the newcomer path).
_links_from = {}
_paths_named = {}


def check_link(source, number, target, root, errors):
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:, file:
        return
    path_part, _, anchor = target.partition("#")
    if path_part:
        resolved = os.path.normpath(os.path.join(os.path.dirname(source), path_part))
        if not os.path.exists(resolved):
            errors.append(f"{os.path.relpath(source, root)}:{number}: link to missing file '{target}'")
            return
    else:
        resolved = source
    _links_from.setdefault(source, set()).add(os.path.normpath(resolved))
    if anchor:
        if os.path.isdir(resolved) or not resolved.endswith(".md"):
            return  # line anchors (#L12) of source files are GitHub's, not headings
        if anchor not in anchors(resolved):
            errors.append(f"{os.path.relpath(source, root)}:{number}: no heading for anchor "
                          f"'#{anchor}' in {os.path.relpath(resolved, root)}")


def expand_braces(text):
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(text[:m.start()] + alt + text[m.end():]))
    return out


def check_code_path(source, number, span, root, errors):
    word = span.strip().split()[0] if span.strip() else ""
    word = word.rstrip(".,;:)")
    if not word.startswith(tuple(d + "/" for d in REPO_DIRS)) and word not in REPO_DIRS:
        return
    if "<" in word:  # tests/fuzz/corpus/<name>/: check what comes before the placeholder
        word = word[:word.index("<")]
    word = re.sub(r"(:\d+)+$", "", word)  # file.cc:12
    for candidate in expand_braces(word):
        full = os.path.join(root, candidate)
        if any(c in candidate for c in "*?["):
            if glob.glob(full):
                continue
        elif os.path.exists(full):
            _paths_named.setdefault(source, set()).add(candidate)
            continue
        errors.append(f"{os.path.relpath(source, root)}:{number}: path `{candidate}` does not exist")


def check_file(source, root, errors):
    for number, line in lines_outside_fences(source):
        # Code spans first: links inside them are text, paths inside them are checked.
        for m in CODE_SPAN_RE.finditer(line):
            check_code_path(source, number, m.group(2), root, errors)
        prose = CODE_SPAN_RE.sub("", line)
        for m in LINK_RE.finditer(prose):
            check_link(source, number, m.group(1), root, errors)
        m = REF_DEF_RE.match(prose)
        if m:
            check_link(source, number, m.group(1), root, errors)


def check_newcomer_path(root, errors):
    """README.md -> docs/architecture.md -> the code: the README links the architecture page,
    and that page names existing folders of libs/ and services/."""
    readme = os.path.join(root, "README.md")
    architecture = os.path.join(root, "docs", "architecture.md")
    if os.path.normpath(architecture) not in _links_from.get(readme, set()):
        errors.append("README.md: no link to docs/architecture.md (the newcomer path starts there)")
    named = _paths_named.get(architecture, set())
    for top in ("libs/", "services/"):
        if not any(p.startswith(top) for p in named):
            errors.append(f"docs/architecture.md: names no existing path under {top}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    files = [os.path.abspath(f) for f in args.files]
    if not files:
        for pattern in ("README.md", "CONTRIBUTING.md", "docs/*.md", "bench/results/*.md", "bench/*/README.md"):
            files.extend(sorted(glob.glob(os.path.join(root, pattern))))
    errors = []
    for f in files:
        check_file(f, root, errors)
    if not args.files:
        check_newcomer_path(root, errors)
    for e in errors:
        print(e)
    print(f"check-links: {len(files)} files, {len(errors)} dead links")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
