"""Generated software-engineering tasks: small Python repositories with one
planted bug, a bug report, a known fix and the tests that decide success.

    task = generate_task(seed)       # deterministic in seed
    task.files                       # {relative path: text} of the buggy repository
    task.issue                       # the bug report (symptom, not the fix)
    task.buggy_file, task.fix_old, task.fix_new
    task.fail_to_pass, task.pass_to_pass   # unittest ids, as in SWE-bench

A repository is a package of 2-4 modules (from repo_templates*), a tests/
package run by the standard library's unittest, and a README. Seed ``s``
plants a bug of kind ``BUG_KINDS[s % 8]`` (the site among that kind's sites
by ``s // 8``), so seeds 0..47 cover every site; the package name and the
companion modules come from ``random.Random(s)``.

Test ids are unittest's dotted names (``tests.test_stats.TestStats.test_mean``).
``run_tests`` runs chosen ids with a runner kept outside the working copy
and returns {id: passed}.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import shlex

from crl_jax.envs.swe.repo_templates import (BUG_KINDS, INTERVALS, INVENTORY, STATS, TEXT,
                                             BugSite, ModuleTemplate)
from crl_jax.envs.swe.repo_templates_more import CONFIG, DURATIONS, PATHS, PRICING

TEMPLATES: tuple[ModuleTemplate, ...] = (STATS, TEXT, INTERVALS, INVENTORY, DURATIONS,
                                         CONFIG, PATHS, PRICING)
PACKAGE_NAMES = ("toolbelt", "datakit", "utilbox", "pyhelpers", "corekit", "minilib",
                 "handytools", "smallbench", "workbench", "stdextra")
SITES_BY_KIND: dict[str, tuple[tuple[ModuleTemplate, BugSite], ...]] = {
    kind: tuple((m, s) for m in TEMPLATES for s in m.sites if s.kind == kind)
    for kind in BUG_KINDS}

_OPENINGS = ("Hi! I think I found a bug.", "Bug report.", "Something looks wrong here.",
             "Ran into this while using the package today.")


@dataclasses.dataclass(frozen=True)
class LocalTask:
    """One generated task; ``files`` hold the buggy repository."""

    task_id: str
    files: dict
    issue: str
    bug_kind: str
    buggy_file: str
    fix_old: str               # occurs exactly once in files[buggy_file]
    fix_new: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    test_files: tuple[str, ...]

    @property
    def title(self) -> str:
        return self.issue.split("\n", 1)[0]

    def fixed_files(self) -> dict:
        """The repository with the known fix applied."""
        files = dict(self.files)
        files[self.buggy_file] = files[self.buggy_file].replace(self.fix_old, self.fix_new, 1)
        return files


def test_ids(module: ModuleTemplate) -> tuple[str, ...]:
    cls = re.search(r"^class (\w+)\(", module.tests, re.MULTILINE).group(1)
    return tuple(f"tests.test_{module.name}.{cls}.{name}"
                 for name in re.findall(r"^    def (test_\w+)\(", module.tests, re.MULTILINE))


def _show(source: str, example: tuple[str, ...]) -> str:
    """The value (or the exception) of the example's last line against ``source``."""
    scope: dict = {}
    try:
        exec(compile(source, "<module>", "exec"), scope)  # our own template code
        for line in example[:-1]:
            exec(line, scope)
        return repr(eval(example[-1], scope))
    except Exception as err:  # noqa: BLE001  (the symptom may be any exception)
        return f"{type(err).__name__}: {err}"


def _issue(rng: random.Random, pkg: str, module: ModuleTemplate, site: BugSite,
           buggy_source: str) -> str:
    names = sorted(set(re.findall(r"\b([A-Za-z_]\w*)\(", " ".join(site.example)))
                   & set(re.findall(r"^(?:def|class) (\w+)", module.source, re.MULTILINE)))
    session = [f">>> from {pkg}.{module.name} import {', '.join(names)}"]
    session += [f">>> {line}" for line in site.example]
    got, expected = _show(buggy_source, site.example), _show(module.source, site.example)
    session.append(got)
    return (f"{pkg}.{module.name}: {site.title}\n\n{rng.choice(_OPENINGS)} {site.report}\n\n"
            + "\n".join(session) + f"\n\nI expected {expected} here.\n")


def generate_task(seed: int, num_modules: int | None = None) -> LocalTask:
    """The task of ``seed`` (deterministic). ``num_modules`` in [2, 4] fixes
    the package size; by default it is drawn from the seed."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    rng = random.Random(seed)
    kind = BUG_KINDS[seed % len(BUG_KINDS)]
    sites = SITES_BY_KIND[kind]
    module, site = sites[(seed // len(BUG_KINDS)) % len(sites)]
    n = rng.randint(2, 4) if num_modules is None else num_modules
    if not 2 <= n <= len(TEMPLATES):
        raise ValueError(f"num_modules must be in [2, {len(TEMPLATES)}], got {n}")
    others = [m for m in TEMPLATES if m is not module]
    modules = sorted([module] + rng.sample(others, n - 1), key=lambda m: m.name)
    pkg = rng.choice(PACKAGE_NAMES)

    assert module.source.count(site.fixed) == 1, (module.name, site.fixed)
    buggy_source = module.source.replace(site.fixed, site.buggy)
    files = {
        "README.md": (f"# {pkg}\n\nSmall helper library: "
                      + ", ".join(m.name for m in modules)
                      + ".\n\nRun the tests with `python -m unittest`.\n"),
        f"{pkg}/__init__.py": f'"""{pkg}: small helpers."""\n__version__ = "0.{seed % 9 + 1}.0"\n',
        "tests/__init__.py": "",
    }
    for m in modules:
        files[f"{pkg}/{m.name}.py"] = buggy_source if m is module else m.source
        files[f"tests/test_{m.name}.py"] = m.tests.replace("{pkg}", pkg)
    buggy_file = f"{pkg}/{module.name}.py"
    if buggy_source.count(site.buggy) != 1:
        raise AssertionError(f"bug snippet not unique in {module.name}: {site.buggy!r}")
    ids = [tid for m in modules for tid in test_ids(m)]
    broken = {f"tests.test_{module.name}.{test_ids(module)[0].split('.')[2]}.{name}"
              for name in site.breaks}
    return LocalTask(
        task_id=f"swe_local:{seed}", files=files,
        issue=_issue(rng, pkg, module, site, buggy_source), bug_kind=kind,
        buggy_file=buggy_file, fix_old=site.buggy, fix_new=site.fixed,
        fail_to_pass=tuple(t for t in ids if t in broken),
        pass_to_pass=tuple(t for t in ids if t not in broken),
        test_files=tuple(f"tests/test_{m.name}.py" for m in modules) + ("tests/__init__.py",))


def write_repo(files: dict, root: str) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


# Loads and runs each id on its own, so one broken module fails only its own
# tests; writes {id: passed} as JSON to argv[2].
_RUNNER = """\
import json, sys, unittest
sys.path.insert(0, '.')
results = {}
for tid in json.loads(sys.argv[1]):
    outcome = unittest.TestResult()
    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(tid)
        suite.run(outcome)
        results[tid] = outcome.wasSuccessful() and outcome.testsRun == 1
    except Exception:
        results[tid] = False
    if not results[tid]:
        for _, trace in outcome.failures + outcome.errors:
            print('FAIL:', tid); print(trace[-1500:])
with open(sys.argv[2], 'w') as f:
    json.dump(results, f)
"""


def run_tests(sandbox, repo_dir: str, ids, timeout_s: float | None = None
              ) -> tuple[dict[str, bool], str]:
    """({id: passed}, runner output) for ``ids`` run in ``repo_dir`` inside
    ``sandbox``. Every id counts as failed if the run timed out or crashed."""
    ids = list(ids)
    result_path = os.path.join(sandbox.tmpdir, f"test_results_{os.getpid()}.json")
    if os.path.exists(result_path):
        os.remove(result_path)
    command = (f"python -c {shlex.quote(_RUNNER)} {shlex.quote(json.dumps(ids))} "
               f"{shlex.quote(result_path)}")
    res = sandbox.run(command, cwd=repo_dir, timeout_s=timeout_s)
    try:
        with open(result_path) as f:
            got = json.load(f)
    except (OSError, ValueError):
        got = {}
    return {t: got.get(t) is True for t in ids}, res.output
