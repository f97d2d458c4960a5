"""More module templates (durations, config, paths, pricing); see repo_templates.py."""
from __future__ import annotations

from crl_jax.envs.swe.repo_templates import BugSite, ModuleTemplate

DURATIONS = ModuleTemplate("durations", '''\
"""Durations and calendar helpers."""
import re

_UNITS = {"h": 3600, "m": 60, "s": 1}


def format_duration(seconds):
    """'1h 02m 03s', '4m 05s' or '7s' for a non-negative whole number of seconds."""
    if seconds < 0:
        raise ValueError("negative duration")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def parse_duration(text):
    """Seconds in a string such as '1h30m' or '45s'."""
    parts = re.findall(r"(\\d+)\\s*([hms])", text.lower())
    if not parts:
        raise ValueError(f"no duration in {text!r}")
    return sum(int(amount) * _UNITS[unit] for amount, unit in parts)


def is_leap_year(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if not 1 <= month <= 12:
        raise ValueError("month must be in 1..12")
    if month == 2:
        return 29 if is_leap_year(year) else 28
    return 30 if month in (4, 6, 9, 11) else 31
''', '''\
import unittest

from {pkg}.durations import days_in_month, format_duration, is_leap_year, parse_duration


class TestDurations(unittest.TestCase):
    def test_format_hours(self):
        self.assertEqual(format_duration(3723), "1h 02m 03s")

    def test_format_minutes(self):
        self.assertEqual(format_duration(125), "2m 05s")

    def test_format_seconds(self):
        self.assertEqual(format_duration(7), "7s")

    def test_parse_duration(self):
        self.assertEqual(parse_duration("1h30m"), 5400)

    def test_parse_seconds(self):
        self.assertEqual(parse_duration("45s"), 45)

    def test_leap_years(self):
        self.assertTrue(is_leap_year(2024))
        self.assertTrue(is_leap_year(2000))

    def test_century_is_not_leap(self):
        self.assertFalse(is_leap_year(1900))

    def test_common_year(self):
        self.assertFalse(is_leap_year(2023))

    def test_days_in_february(self):
        self.assertEqual(days_in_month(2024, 2), 29)
        self.assertEqual(days_in_month(2023, 2), 28)

    def test_days_in_december(self):
        self.assertEqual(days_in_month(2023, 12), 31)
''', (
    BugSite("constant", "hours, rest = divmod(seconds, 3600)", "hours, rest = divmod(seconds, 360)",
            ("test_format_hours",), "format_duration shows far too many hours",
            "Durations longer than an hour are printed with the wrong number of hours.",
            ("format_duration(3723)",)),
    BugSite("boolean_operator", "return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)",
            "return year % 4 == 0 or (year % 100 != 0 or year % 400 == 0)",
            ("test_century_is_not_leap", "test_common_year", "test_days_in_february"),
            "ordinary years are treated as leap years",
            "2023 is reported as a leap year, so February gets 29 days.",
            ("is_leap_year(2023)",)),
    BugSite("comparison", "if not 1 <= month <= 12:", "if not 1 <= month < 12:",
            ("test_days_in_december",), "days_in_month rejects December",
            "Asking for the number of days in December raises an error.",
            ("days_in_month(2023, 12)",)),
))

CONFIG = ModuleTemplate("config", '''\
"""Parsing of simple ``key = value`` configuration text."""


def parse_config(text):
    """Dict of the ``key = value`` lines of ``text``; '#' starts a comment line."""
    result = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"line {number}: expected 'key = value', got {raw!r}")
        result[key.strip()] = value.strip()
    return result


def get_bool(config, key, default=False):
    """A boolean setting: 1/true/yes/on (any case) are true."""
    value = config.get(key)
    if value is None:
        return default
    return value.lower() in ("1", "true", "yes", "on")


def get_int(config, key, default=0):
    raw = config.get(key)
    if raw is None:
        return default
    number = int(raw)
    return number


def merge_configs(base, override):
    """Settings of ``base`` updated by those of ``override`` (neither is changed)."""
    merged = dict(base)
    merged.update(override)
    return merged
''', '''\
import unittest

from {pkg}.config import get_bool, get_int, merge_configs, parse_config


class TestConfig(unittest.TestCase):
    def test_parse_config(self):
        text = "# comment\\nname = demo\\n\\nport=8080\\n"
        self.assertEqual(parse_config(text), {"name": "demo", "port": "8080"})

    def test_parse_error_names_the_line(self):
        with self.assertRaisesRegex(ValueError, "line 2"):
            parse_config("a = 1\\nbroken\\n")

    def test_get_bool(self):
        self.assertTrue(get_bool({"debug": "Yes"}, "debug"))
        self.assertFalse(get_bool({"debug": "off"}, "debug"))

    def test_get_bool_default(self):
        self.assertFalse(get_bool({}, "debug"))

    def test_get_int(self):
        self.assertEqual(get_int({"port": "8080"}, "port"), 8080)

    def test_get_int_default(self):
        self.assertEqual(get_int({}, "port"), 0)

    def test_merge_configs(self):
        base = {"a": "1", "b": "2"}
        self.assertEqual(merge_configs(base, {"b": "3"}), {"a": "1", "b": "3"})
        self.assertEqual(base, {"a": "1", "b": "2"})
''', (
    BugSite("off_by_one", "enumerate(text.splitlines(), start=1)", "enumerate(text.splitlines())",
            ("test_parse_error_names_the_line",), "parse errors point at the wrong line",
            "The error message for a malformed line names the line before the broken one.",
            ('parse_config("a = 1\\nbroken\\n")',)),
    BugSite("constant", "def get_bool(config, key, default=False):",
            "def get_bool(config, key, default=True):", ("test_get_bool_default",),
            "missing boolean settings are treated as enabled",
            "A flag that is not in the configuration at all comes back as True.",
            ('get_bool({}, "debug")',)),
    BugSite("return_var", "return number", "return raw", ("test_get_int",),
            "get_int returns a string", "Integer settings come back as text.",
            ('get_int({"port": "8080"}, "port")',)),
    BugSite("swapped_args", "merged = dict(base)\n    merged.update(override)",
            "merged = dict(override)\n    merged.update(base)", ("test_merge_configs",),
            "merge_configs ignores overrides",
            "Values from the override mapping do not replace the base values.",
            ('merge_configs({"a": "1", "b": "2"}, {"b": "3"})',)),
))

PATHS = ModuleTemplate("paths", '''\
"""File-name helpers."""


def split_ext(name):
    """('archive.tar', '.gz') for 'archive.tar.gz'; dot-files have no extension."""
    dot = name.rfind(".")
    if dot <= 0:
        return name, ""
    return name[:dot], name[dot:]


def visible(names):
    """The names that are not hidden (hidden names start with a dot)."""
    return [name for name in names if not name.startswith(".")]


def unique(names):
    """``names`` without repeats, first occurrence kept, order preserved."""
    seen = set()
    ordered = []
    for name in names:
        if name not in seen:
            seen.add(name)
            ordered.append(name)
    return ordered


def join_path(*parts):
    """Join with single slashes: join_path('a/', '/b', 'c') == 'a/b/c'."""
    cleaned = [part.strip("/") for part in parts if part.strip("/")]
    return "/".join(cleaned)
''', '''\
import unittest

from {pkg}.paths import join_path, split_ext, unique, visible


class TestPaths(unittest.TestCase):
    def test_split_ext(self):
        self.assertEqual(split_ext("archive.tar.gz"), ("archive.tar", ".gz"))

    def test_split_ext_dotfile(self):
        self.assertEqual(split_ext(".bashrc"), (".bashrc", ""))

    def test_split_ext_no_extension(self):
        self.assertEqual(split_ext("Makefile"), ("Makefile", ""))

    def test_visible(self):
        self.assertEqual(visible(["a.py", ".git", "b.txt", ".env"]), ["a.py", "b.txt"])

    def test_unique(self):
        self.assertEqual(unique(["b", "a", "b", "c", "a"]), ["b", "a", "c"])

    def test_join_path(self):
        self.assertEqual(join_path("a/", "/b", "c"), "a/b/c")
''', (
    BugSite("comparison", "if dot <= 0:", "if dot < 0:", ("test_split_ext_dotfile",),
            "split_ext treats dot-files as having an extension",
            "For '.bashrc' the whole name ends up as the extension and the stem is empty.",
            ('split_ext(".bashrc")',)),
    BugSite("negation", 'if not name.startswith(".")]', 'if name.startswith(".")]',
            ("test_visible",), "visible() returns only the hidden files",
            "Filtering a directory listing keeps exactly the names it should drop.",
            ('visible(["a.py", ".git", "b.txt"])',)),
    BugSite("negation", "if name not in seen:", "if name in seen:", ("test_unique",),
            "unique() returns an empty list", "De-duplicating a list of names loses every name.",
            ('unique(["b", "a", "b"])',)),
    BugSite("return_var", "return ordered", "return seen", ("test_unique",),
            "unique() loses the original order",
            "The de-duplicated names do not come back as a list in first-seen order.",
            ('unique(["b", "a", "b", "c"])',)),
))

PRICING = ModuleTemplate("pricing", '''\
"""Prices, discounts and taxes (amounts in one currency)."""


def apply_discount(price, percent):
    """``price`` reduced by ``percent`` per cent, rounded to cents."""
    if not 0 <= percent <= 100:
        raise ValueError("percent must be within 0..100")
    return round(price * (100 - percent) / 100, 2)


def add_tax(price, rate=0.2):
    """``price`` plus tax at ``rate`` (0.2 is 20 %), rounded to cents."""
    return round(price * (1 + rate), 2)


def unit_price(total, quantity):
    """Price of one unit when ``quantity`` units cost ``total``."""
    if quantity <= 0:
        raise ValueError("quantity must be positive")
    return total / quantity


def cheapest_offer(offers):
    """Index of the (total, quantity) offer with the lowest unit price."""
    prices = [unit_price(total, quantity) for total, quantity in offers]
    return prices.index(min(prices))


def split_bill(total, people):
    """Shares in whole cents that add up exactly to ``total``."""
    if people < 1:
        raise ValueError("people must be at least 1")
    share, extra = divmod(round(total * 100), people)
    return [(share + (1 if i < extra else 0)) / 100 for i in range(people)]
''', '''\
import unittest

from {pkg}.pricing import add_tax, apply_discount, cheapest_offer, split_bill, unit_price


class TestPricing(unittest.TestCase):
    def test_apply_discount(self):
        self.assertEqual(apply_discount(80.0, 25), 60.0)

    def test_discount_out_of_range(self):
        with self.assertRaises(ValueError):
            apply_discount(10.0, 120)

    def test_add_tax_default_rate(self):
        self.assertEqual(add_tax(100.0), 120.0)

    def test_add_tax_custom_rate(self):
        self.assertEqual(add_tax(100.0, rate=0.1), 110.0)

    def test_unit_price(self):
        self.assertEqual(unit_price(10.0, 4), 2.5)

    def test_cheapest_offer(self):
        self.assertEqual(cheapest_offer([(10.0, 4), (9.0, 2), (12.0, 3)]), 0)

    def test_split_bill(self):
        self.assertEqual(split_bill(10.0, 3), [3.34, 3.33, 3.33])

    def test_split_bill_even(self):
        self.assertEqual(split_bill(9.0, 3), [3.0, 3.0, 3.0])
''', (
    BugSite("arithmetic", "return round(price * (100 - percent) / 100, 2)",
            "return round(price * (100 + percent) / 100, 2)", ("test_apply_discount",),
            "discounts make things more expensive",
            "Applying a 25 % discount raises the price instead of lowering it.",
            ("apply_discount(80.0, 25)",)),
    BugSite("constant", "def add_tax(price, rate=0.2):", "def add_tax(price, rate=0.02):",
            ("test_add_tax_default_rate",), "add_tax charges too little tax by default",
            "The docstring promises a 20 % default rate, but the result is much lower.",
            ("add_tax(100.0)",)),
    BugSite("swapped_args", "prices = [unit_price(total, quantity) for total, quantity in offers]",
            "prices = [unit_price(quantity, total) for total, quantity in offers]",
            ("test_cheapest_offer",), "cheapest_offer picks an expensive offer",
            "Of 4 items for 10.00 and 2 items for 9.00 it recommends the second.",
            ("cheapest_offer([(10.0, 4), (9.0, 2)])",)),
    BugSite("comparison", "(1 if i < extra else 0)", "(1 if i <= extra else 0)",
            ("test_split_bill", "test_split_bill_even"), "split_bill shares do not add up",
            "The shares of a split bill sum to more than the bill.",
            ("split_bill(9.0, 3)",)),
))
