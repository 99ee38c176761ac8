#!/usr/bin/env python3
"""Lists the functions under src/ whose bodies run over a line limit (default 120), longest first.

    usage: scripts/function_lengths.py [--max N] [--under DIR] [PATH ...]

A function is a top-level brace block (in a namespace, or a class's member defined in it) whose opening
brace follows a `)` (possibly with const/override/noexcept/-> T/: initializers between): its length is
the lines from its signature's first line to the closing brace. Comments, strings and preprocessor lines
are blanked before the braces are counted, so braces inside them do not count. Exits 1 when any function
of the PATHs (default: every .h/.cpp/.cu under src/) is over the limit and --under names no folder, or
when a function under --under's folder is (the rest are listed, not failed).
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def blank(text):
    """Comments, string and char literals and preprocessor lines replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            m = re.match(r'R"([^(]*)\(', text[i - 1:i + 20]) if c == '"' and i > 0 and text[i - 1] == "R" else None
            if m:
                end = text.find(")" + m.group(1) + '"', i)
                j = n if end < 0 else end + len(m.group(1)) + 2
            else:
                j = i + 1
                while j < n and text[j] != c:
                    j += 2 if text[j] == "\\" else 1
                j += 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else text[i:j]); i = j
        elif c == "#" and (i == 0 or text[i - 1] == "\n" or text[:i].rsplit("\n", 1)[-1].strip() == ""):
            j = i
            while True:  # a directive with its continuation lines
                k = text.find("\n", j)
                k = n if k < 0 else k
                if text[k - 1:k] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            out.append(re.sub(r"[^\n]", " ", text[i:k])); i = k
        else:
            out.append(c); i += 1
    return "".join(out)


SCOPE = re.compile(r"(namespace[\w\s:]*|(class|struct|union)\s+[\w:<>, ]+(\s*final)?(\s*:[^{;]*)?|extern\s*\"C\"\s*)$")


def functions(path):
    text = blank(path.read_text(errors="replace"))
    found, stack, i = [], [], 0  # stack: ("scope" | "func" | "other", start offset)
    for m in re.finditer(r"[{}]", text):
        if m.group() == "{":
            head = text[:m.start()]
            prev = head[max(0, head.rfind(";"), head.rfind("}"), head.rfind("{")) + 1:].strip()
            in_func = any(k == "func" for k, _ in stack)
            if in_func:
                stack.append(("other", m.start()))
            elif SCOPE.search(" ".join(prev.split())):
                stack.append(("scope", m.start()))
            elif re.search(r"\)\s*(const|override|final|noexcept|mutable|->\s*[\w:<>&*\s,]+|\s)*(:[\s\S]*)?$", prev) \
                    and not re.match(r"^(if|for|while|switch|catch)\b", prev) and "=" not in prev.split("(")[0]:
                start = head.rfind(prev.split("\n")[0]) if prev else m.start()
                stack.append(("func", start))
            else:
                stack.append(("other", m.start()))
        else:
            if not stack:
                continue
            kind, start = stack.pop()
            if kind == "func":
                first = text.count("\n", 0, start) + 1
                last = text.count("\n", 0, m.start()) + 1
                names = [x for x in re.findall(r"([~\w:]+)\s*\(", text[start:m.start()]) if x != "__launch_bounds__"]
                found.append((last - first + 1, first, names[0] if names else "?"))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=120)
    ap.add_argument("--under", help="fail only for functions under this folder (e.g. src/kernels)")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    paths = [pathlib.Path(p) for p in a.paths] or sorted(
        p for p in (ROOT / "src").rglob("*") if p.suffix in (".h", ".cpp", ".cu"))
    over = []
    for p in paths:
        for length, line, name in functions(p):
            if length > a.max:
                over.append((length, str(p.resolve().relative_to(ROOT)), line, name))
    failing = [o for o in over if not a.under or o[1].startswith(a.under.rstrip("/") + "/")]
    for length, rel, line, name in sorted(over, reverse=True):
        print(f"{length:5d} lines  {rel}:{line}  {name}")
    print(f"{len(over)} function(s) over {a.max} lines" + (f", {len(failing)} under {a.under}" if a.under else ""))
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
