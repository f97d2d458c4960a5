"""Keeps docs/FINDINGS.md's numbers equal to docs/RESULTS.md's tables.

FINDINGS.md has one ``## `` section per claim of the paper and per study. A
section that quotes RESULTS.md names the figures it quotes on a line
``Records: NAME[, NAME...]`` (NAME: the png name in RESULTS.md's image
links), and says how to remake them on a line ``Command: ...``. Every
decimal number of its prose (``0.76x``, ``+0.15``, ``0.188``) must then be
printed, the same digits and sign, in a table (or a table's caption) of the
RESULTS.md sections of those figures: each ``##`` section that holds
``out/NAME.png``, plus the headline section for the headline figures.
Numbers inside backtick code spans, on the Records and Command lines, and in
paragraphs that begin ``*Measured by* `COMMAND`:`` (numbers a diagnostic
printed, not a figure) are not checked; a section without a Records line
may hold decimal numbers only there. The claims table before the first
section obeys the same rule: the numbers of its "here" column must be in
the tables of the section its "section" column links to.

    python experiments/figures/findings_check.py   # prints the problems; exit 1 if any
"""
from __future__ import annotations

import os
import re
import sys

from experiments.figures.results_doc import HEADLINE_FIGURES, HEADLINE_TITLE

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FINDINGS_MD = os.path.join(REPO, "docs", "FINDINGS.md")
RESULTS_MD = os.path.join(REPO, "docs", "RESULTS.md")

NUMBER = re.compile(r"(?<![\w.])[+-]?\d+\.\d+x?")
MEASURED = re.compile(r"^\*Measured by\* `[^`]+`:")
CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"\]\(#([^)]+)\)")
DATE_IN_HEADING = re.compile(r"20\d\d")
ISO_DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
ISSUE_OR_SESSION = re.compile(r"\b(issues?|sessions?)\s+#?\d+", re.IGNORECASE)


def sections(text: str) -> list[tuple[str, str]]:
    """The ``## `` sections of a markdown text, in order: (heading without
    "## ", body up to the next such heading). Duplicate headings stay."""
    out: list[tuple[str, list[str]]] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            out.append((line[3:].strip(), []))
        elif out:
            out[-1][1].append(line)
    return [(h, "\n".join(body)) for h, body in out]


def preamble(text: str) -> str:
    """What comes before the first ``## `` section."""
    match = re.search(r"^## ", text, flags=re.MULTILINE)
    return text[:match.start()] if match else text


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def records(body: str) -> list[str]:
    """The figure names of a section's ``Records:`` line ([] without one)."""
    for line in body.splitlines():
        if line.startswith("Records:"):
            return [n.strip() for n in line[len("Records:"):].split(",") if n.strip()]
    return []


def paragraphs(body: str) -> list[str]:
    """Blocks of consecutive non-blank lines, fenced code blocks left out."""
    out, block, fenced = [], [], False
    for line in body.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.strip():
            block.append(line)
        elif block:
            out.append("\n".join(block))
            block = []
    if block:
        out.append("\n".join(block))
    return out


def checked_prose(body: str) -> str:
    """The text of a section whose numbers are checked: without the Records
    and Command lines, the *Measured by* paragraphs and code spans."""
    kept = []
    for para in paragraphs(body):
        if para.startswith("*Measured by*"):
            continue
        lines = [ln for ln in para.splitlines()
                 if not ln.startswith(("Records:", "Command:"))]
        kept.append(CODE_SPAN.sub(" ", "\n".join(lines)))
    return "\n\n".join(kept)


def numbers(text: str) -> list[str]:
    """The decimal numbers of a text as written (sign and trailing x kept)."""
    return NUMBER.findall(CODE_SPAN.sub(" ", text))


def occurs(number: str, text: str) -> bool:
    """Whether ``number`` is printed in ``text`` as a whole number (0.7 is not
    in 0.76; 0.15 is in +0.15, +0.15 is not in 0.15)."""
    return re.search(r"(?<![\d.])" + re.escape(number) + r"(?!\d)", text) is not None


def table_text(body: str) -> str:
    """The tables of a RESULTS.md section with their captions: its lines that
    start with "|" or are an italic caption, the runs list (<details>) left out."""
    out, details = [], False
    for line in body.splitlines():
        if line.startswith("<details"):
            details = True
        elif line.startswith("</details"):
            details = False
        elif not details and (line.startswith("|") or
                              (line.startswith("*") and line.rstrip().endswith("*"))):
            out.append(line)
    return "\n".join(out)


def figure_tables(results: str, names: list[str]) -> tuple[str, list[str]]:
    """The table text of RESULTS.md's sections of these figures (each section
    holding ``out/NAME.png``, and the headline for the headline figures), and
    the names no section holds."""
    secs = sections(results)
    parts, unknown = [], []
    for name in names:
        found = [body for _, body in secs if f"out/{name}.png" in body]
        if not found:
            unknown.append(name)
        parts += found
        if name in HEADLINE_FIGURES:
            parts += [body for heading, body in secs if heading == HEADLINE_TITLE]
    return "\n".join(table_text(p) for p in parts), unknown


def claims_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The claims table: the first table before the first section whose
    header names a "claim" column; (columns, rows), ([], []) if there is none."""
    lines = [ln.strip() for ln in preamble(text).splitlines()]
    for i, line in enumerate(lines):
        if line.startswith("|") and "claim" in line.lower() and i + 1 < len(lines) \
                and set(lines[i + 1].replace("|", "").strip()) <= set("-: "):
            cols = [c.strip().lower() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            return cols, rows
    return [], []


def problems(findings: str, results: str) -> list[str]:
    """Everything that breaks the rules of this module's docstring, one line
    each (empty: FINDINGS.md agrees with RESULTS.md)."""
    out = []
    secs = sections(findings)
    by_slug = {}
    for heading, body in secs:
        if slug(heading) in by_slug:
            out.append(f"heading twice: {heading!r}")
        by_slug[slug(heading)] = (heading, body)
        if DATE_IN_HEADING.search(heading):
            out.append(f"a date in a heading: {heading!r}")
        for para in paragraphs(body):
            if para.startswith("*Measured by*") and not MEASURED.match(para):
                out.append(f"{heading}: a *Measured by* paragraph must begin "
                           f"'*Measured by* `COMMAND`:': {para[:60]!r}")
        names = records(body)
        prose = heading + "\n\n" + checked_prose(body)
        if not names:
            for n in numbers(prose):
                out.append(f"{heading}: {n} is neither in a figure's table (no Records line) "
                           "nor in a *Measured by* paragraph")
            continue
        if not any(ln.startswith("Command:") for ln in body.splitlines()):
            out.append(f"{heading}: Records without a Command line")
        tables, unknown = figure_tables(results, names)
        out += [f"{heading}: no RESULTS.md section shows out/{n}.png" for n in unknown]
        for n in numbers(prose):
            if not occurs(n, tables):
                out.append(f"{heading}: {n} is not in the tables of {', '.join(names)}")
    for m in ISO_DATE.finditer(findings):
        out.append(f"a date: {m.group(0)}")
    for m in ISSUE_OR_SESSION.finditer(findings):
        out.append(f"an issue or session number: {m.group(0)!r}")
    cols, rows = claims_rows(findings)
    if not rows:
        return out + ["no claims table (a table with a 'claim' column) before the first section"]
    if "here" not in cols or "section" not in cols:
        return out + [f"the claims table needs 'here' and 'section' columns, has {cols}"]
    here, where = cols.index("here"), cols.index("section")
    for row in rows:
        if len(row) != len(cols):
            out.append(f"claims row with {len(row)} cells, not {len(cols)}: {row[0]!r}")
            continue
        link = LINK.search(row[where])
        target = by_slug.get(link.group(1)) if link else None
        if target is None:
            out.append(f"claims row {row[0]!r}: its section link {row[where]!r} names no section")
            continue
        nums = numbers(row[here])
        names = records(target[1])
        if nums and not names:
            out.append(f"claims row {row[0]!r}: numbers, but {target[0]!r} has no Records line")
            continue
        tables, _ = figure_tables(results, names)
        for n in nums:
            if not occurs(n, tables):
                out.append(f"claims row {row[0]!r}: {n} is not in the tables of {', '.join(names)}")
    return out


def main() -> int:
    with open(FINDINGS_MD, encoding="utf-8") as f:
        findings = f.read()
    with open(RESULTS_MD, encoding="utf-8") as f:
        results = f.read()
    found = problems(findings, results)
    print("\n".join(found) or "FINDINGS.md agrees with RESULTS.md")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
