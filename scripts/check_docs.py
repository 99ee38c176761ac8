#!/usr/bin/env python3
"""Checks README.md and docs/*.md: balanced code fences, relative links that resolve, no chronicle in prose.

  usage: /usr/bin/python3 scripts/check_docs.py [FILE.md ...]     (default: README.md docs/*.md)

(a) Code fences (``` or ~~~ lines) pair up; a fence that opens inside an open fence is an error.
(b) Every relative link or image, [text](path) or [text](path#anchor), names an existing file or folder,
    relative to the markdown file; http(s):, mailto: and pure #anchor links are not checked. An anchor
    into a markdown file must name one of its headings (GitHub's slugs).
(c) Prose says what the program does, not its history: outside code blocks, inline code, link targets
    and table rows (lines starting with |), no ISO dates, no commit-hash-like words and none of the
    phrases in CHRONICLE. git log and bench/results/ keep the history. The blocks that the benchmark
    scripts write between <!-- NAME-TABLE:DEVICE --> and <!-- /NAME-TABLE:DEVICE --> markers (their
    record's header) are exempt from (c).
Each error is printed as file:line: what; the exit status is 1 when there is any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s{0,12}(`{3,}|~{3,})(.*)$")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
GENERATED = re.compile(r"^<!--\s*(/?)([A-Z]+-TABLE:[\w-]+)\s*-->\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
ISO_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
HEXWORD = re.compile(r"(?<![\w./#-])[0-9a-f]{7,40}(?![\w/-])")
CHRONICLE = [
    (re.compile(r"\bwas:", re.I), '"was:"'),
    (re.compile(r"\bnot yet\b", re.I), '"not yet"'),
    (re.compile(r"\bno longer\b", re.I), '"no longer"'),
    (re.compile(r"\bpreviously\b", re.I), '"previously"'),
    (re.compile(r"\bformerly\b", re.I), '"formerly"'),
    (re.compile(r"\buntil recently\b", re.I), '"until recently"'),
    (re.compile(r"\bthe defaults? before\b", re.I), '"the defaults before"'),
    (re.compile(r"\bbefore (?:the|this|that) (?:fix|change|commit)\b", re.I), "a history phrase"),
]
USED_TO = re.compile(r"\bused to\b", re.I)
PASSIVE = re.compile(r"\b(?:is|are|be|been|being|gets?|when|where|and|or|,)\s*$", re.I)


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def headings(path, cache={}):
    if path not in cache:
        anchors, seen, fence = set(), {}, None
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = FENCE.match(line)
                if m:
                    fence = None if fence else m.group(1)[0]
                    continue
                if fence:
                    continue
                h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if h:
                    s = slug(h.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    anchors.add(s if n == 0 else f"{s}-{n}")
                for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                    anchors.add(a)
        cache[path] = anchors
    return cache[path]


def check(path):
    errors = []
    rel = os.path.relpath(path, ROOT)
    here = os.path.dirname(path)

    def err(lineno, what):
        errors.append(f"{rel}:{lineno}: {what}")

    fence = None  # (marker, opening line) of the open code block
    generated = None  # the NAME-TABLE:DEVICE block a benchmark script writes, while inside one
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for lineno, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m:
            marker, info = m.group(1), m.group(2).strip()
            if fence is None:
                fence = (marker, lineno)
            elif marker[0] == fence[0][0] and len(marker) >= len(fence[0]) and not info:
                fence = None
            else:
                err(lineno, f"a code fence opens inside the code block opened at line {fence[1]}")
            continue
        if fence is not None:
            continue
        g = GENERATED.match(line.strip())
        if g:
            generated = None if g.group(1) else g.group(2)
            continue

        # (b) links, outside inline code
        prose = INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)
        for lm in LINK.finditer(prose):
            target = lm.group(2)
            if not target or target.startswith(("http://", "https://", "mailto:", "#", "ftp://")):
                if target.startswith("#") and len(target) > 1 and target[1:] not in headings(path):
                    err(lineno, f"link to {target}: no such heading in this file")
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(here, file_part))
            if not os.path.exists(dest):
                err(lineno, f"link to {target}: {os.path.relpath(dest, ROOT)} does not exist")
            elif anchor and dest.endswith(".md") and anchor not in headings(dest):
                err(lineno, f"link to {target}: no heading #{anchor} in {os.path.relpath(dest, ROOT)}")

        # (c) chronicle words, outside tables, inline code and link targets
        if generated or line.lstrip().startswith("|"):
            continue
        prose = LINK.sub(lambda l: "[" + l.group(1) + "]", prose)
        for dm in ISO_DATE.finditer(prose):
            err(lineno, f"a date in prose ({dm.group(0)}): the history belongs in git log and bench/results/")
        for hm in HEXWORD.finditer(prose):
            word = hm.group(0)
            if re.search(r"\d", word) and re.search(r"[a-f]", word):
                err(lineno, f"a commit hash in prose ({word}): the history belongs in git log")
        for pattern, name in CHRONICLE:
            if pattern.search(prose):
                err(lineno, f"{name}: say what the program does now (present tense)")
        for um in USED_TO.finditer(prose):
            if not PASSIVE.search(prose[: um.start()]):
                err(lineno, '"used to": say what the program does now (present tense)')
    if fence is not None:
        err(fence[1], "a code fence that never closes")
    return errors


def main(argv):
    files = argv or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", n) for n in os.listdir(os.path.join(ROOT, "docs")) if n.endswith(".md"))
    errors = []
    for path in files:
        errors += check(os.path.abspath(path))
    for e in errors:
        print(e)
    if errors:
        print(f"check_docs: {len(errors)} problem(s) in the documentation", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
