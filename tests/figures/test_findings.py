"""docs/FINDINGS.md quotes docs/RESULTS.md's tables exactly: every decimal
number of a section's prose is printed in the tables of the figures its
Records line names (experiments/figures/findings_check.py), the claims table
comes first, and the document is a reference, not a diary."""
from __future__ import annotations

import os
import re

import pytest

from experiments.figures import findings_check as fc
from experiments.figures import reproduce
from experiments.figures.results_doc import HEADLINE_TITLE

REPO = fc.REPO


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def findings() -> str:
    return read(fc.FINDINGS_MD)


@pytest.fixture(scope="module")
def results() -> str:
    return read(fc.RESULTS_MD)


def test_findings_quote_the_results_tables_exactly(findings, results):
    assert fc.problems(findings, results) == []


def test_most_sections_quote_a_figure_and_every_figure_is_read(findings, results):
    secs = fc.sections(findings)
    quoting = [h for h, body in secs if fc.records(body)]
    assert len(quoting) >= 20, quoting
    named = {n for _, body in secs for n in fc.records(body)}
    drawn = set(re.findall(r"!\[(\w+)\]\(", results))
    assert drawn and drawn <= named, f"figures no section reads: {sorted(drawn - named)}"


def test_claims_table_comes_before_the_first_section_and_links_every_row(findings):
    cols, rows = fc.claims_rows(findings)
    assert cols[:5] == ["claim", "paper", "here", "holds?", "section"]
    assert len(rows) >= 15
    assert findings.index("| claim |") < findings.index("\n## ")
    assert {r[3] for r in rows} <= {"yes", "no", "partly", "not run"}
    slugs = {fc.slug(h) for h, _ in fc.sections(findings)}
    for row in rows:
        link = fc.LINK.search(row[4])
        assert link and link.group(1) in slugs, row


def test_no_dates_issue_or_session_numbers_and_no_diary(findings):
    for heading, _ in fc.sections(findings):
        assert not re.search(r"20\d\d", heading), heading
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", findings)
    assert not re.search(r"\b(issues?|sessions?)\s+#?\d+", findings, re.IGNORECASE)
    assert "RESULTS_READING" not in findings and "TRAINER_LOG" not in findings


def test_commands_name_scripts_and_figures_that_exist(findings):
    scripts = set(reproduce.SCRIPTS) | set(reproduce.ALIASES)
    for only in re.findall(r"--only=([a-z0-9_,]+)", findings):
        assert set(only.split(",")) <= scripts, only
    for path in set(re.findall(r"python3? (experiments/[\w/]+\.py)", findings)):
        assert os.path.exists(os.path.join(REPO, path)), path


# ---------------------------------------------------------------- the checker itself

RESULTS = f"""# Results

## {HEADLINE_TITLE}

| env | success ratio (train) |
|---|---|
| ALFWorld | 0.76x (seeds 0.69, 0.75, 0.91) |

## Fig. 6: success over training

![fig6_success](../experiments/figures/out/fig6_success.png)

*Final success. Cells: mean [min, max] over seeds.*

| env | Comp. RL | Baseline (GRPO) |
|---|---|---|
| ALFWorld | 0.45 [0.38, 0.55] | 0.59 [0.47, 0.80] |

<details><summary>runs</summary>

| label | wall (min) |
|---|---|
| Comp. RL | 4.4 |

</details>

## Oracle ladder

![oracle_ladder](../experiments/figures/out/oracle_ladder.png)

| arm | first 5 steps |
|---|---|
| own plan | 0.44 / 0.29 (+0.15; seeds 0.05, 0.29, 0.10) |

## Reading

Read elsewhere: 0.99.
"""

FINDINGS = """# Findings

| claim | paper | here | holds? | section |
|---|---|---|---|---|
| Fig. 6 | ~1.3x | {here} | no | [Fig. 6](#fig-6-success) |

## Fig. 6: success

Records: fig6_success
Command: `python experiments/figures/reproduce.py --only=fig6_success` (0.12 here is code)

Comp. RL trains {prose} against 0.59, 0.76x (seeds 0.69, 0.75, 0.91).

*Measured by* `python experiments/figures/run_stats.py --preset=alfworld_cpu`: 0.573 and 0.427.

## Oracle ladder

Records: oracle_ladder
Command: `python experiments/figures/reproduce.py --only=oracle_ladder`

The own plan: {gap} over the first 5 steps.

## A diagnostic

{diagnostic}
"""


def synthetic(here="0.76x", prose="0.45", gap="+0.15",
              diagnostic="*Measured by* `python x.py`: 0.31.") -> str:
    return FINDINGS.format(here=here, prose=prose, gap=gap, diagnostic=diagnostic)


def test_checker_passes_a_faithful_pair():
    assert fc.problems(synthetic(), RESULTS) == []


@pytest.mark.parametrize("kw, reported", [
    ({"prose": "0.46"}, "Fig. 6: success: 0.46 is not in the tables of fig6_success"),
    # a number of another figure's table is not enough
    ({"prose": "0.44"}, "Fig. 6: success: 0.44 is not in the tables of fig6_success"),
    # nor the runs list's wall times, nor the Reading section's text
    ({"prose": "4.4"}, "Fig. 6: success: 4.4 is not in the tables of fig6_success"),
    ({"prose": "0.99"}, "Fig. 6: success: 0.99 is not in the tables of fig6_success"),
    # digits and sign exactly: no prefix of a longer number, no sign the table lacks
    ({"prose": "0.4"}, "Fig. 6: success: 0.4 is not in the tables of fig6_success"),
    ({"gap": "+0.05"}, "Oracle ladder: +0.05 is not in the tables of oracle_ladder"),
    ({"here": "0.77x"}, "claims row 'Fig. 6': 0.77x is not in the tables of fig6_success"),
    ({"diagnostic": "It reads 0.31."}, "A diagnostic: 0.31 is neither in a figure's table"),
    ({"diagnostic": "*Measured by* python x.py: 0.31."}, "must begin '*Measured by* `COMMAND`:'"),
])
def test_checker_reports_what_the_tables_do_not_hold(kw, reported):
    found = fc.problems(synthetic(**kw), RESULTS)
    assert any(reported in p for p in found), found


def test_checker_reads_the_headline_for_the_headline_figures_only():
    # the seeds are printed only in the headline, which belongs to fig6_success
    assert fc.problems(synthetic(), RESULTS) == []
    moved = synthetic(gap="+0.15 (seeds 0.69)")
    assert any("0.69 is not in the tables of oracle_ladder" in p
               for p in fc.problems(moved, RESULTS))


def test_checker_reports_structure_faults():
    assert any("names no section" in p for p in
               fc.problems(synthetic().replace("(#fig-6-success)", "(#nowhere)"), RESULTS))
    assert any("no RESULTS.md section shows out/fig99.png" in p for p in
               fc.problems(synthetic().replace("Records: oracle_ladder", "Records: fig99"),
                           RESULTS))
    assert any("a date in a heading" in p for p in
               fc.problems(synthetic().replace("## A diagnostic", "## A diagnostic of 2026"),
                           RESULTS))
    assert any("issue or session" in p for p in
               fc.problems(synthetic(diagnostic="As issue 23 asked."), RESULTS))
    no_table = synthetic().split("## Fig. 6")[0].split("| claim")[0] + \
        "## Fig. 6" + synthetic().split("## Fig. 6", 1)[1]
    assert any("no claims table" in p for p in fc.problems(no_table, RESULTS))


def test_number_matching_is_exact():
    assert fc.numbers("0.76x, +0.15 and -0.09; `0.5` skipped; 1,200 and 3e-5 are no decimals") \
        == ["0.76x", "+0.15", "-0.09"]
    assert fc.occurs("0.15", "(+0.15; seeds") and not fc.occurs("+0.15", "seeds 0.15,")
    assert not fc.occurs("0.7", "0.76x") and fc.occurs("0.76", "0.76x")
    assert fc.slug("Fig. 3 left: how it's built, 1.17x") == "fig-3-left-how-its-built-117x"


def test_code_cites_findings_sections_that_exist(findings):
    """Comments and docstrings cite a section by its heading or the heading's
    start, in quotes after 'docs/FINDINGS.md,'; a renamed heading must take
    its citations along."""
    headings = [h for h, _ in fc.sections(findings)]
    cited = []
    for top in ("crl_jax", "experiments", "models", "kernels", "tests"):
        for root, _, files in os.walk(os.path.join(REPO, top)):
            for name in files:
                if name.endswith(".py"):
                    text = re.sub(r"\n\s*#?\s*", " ", read(os.path.join(root, name)))
                    cited += [(name, c) for c in re.findall(r'FINDINGS\.md,\s*"([^"]+)"', text)]
    assert cited
    for name, c in cited:
        assert any(h.startswith(c) for h in headings), (name, c)
