"""Module templates for the generated repositories (data for local_tasks.py).

Each template is a small, correct stdlib-only module, its unittest file
(``{pkg}`` stands for the package name) and its bug sites. A site replaces
``fixed`` (which occurs exactly once in the module) by ``buggy``; exactly the
tests named in ``breaks`` then fail and every other test of the repository
still passes (checked for every site by tests/envs/test_swe.py). ``example``
is a short session that shows the symptom in the issue text: setup lines and
a final expression whose value is reported.
"""
from __future__ import annotations

import dataclasses

BUG_KINDS = ("off_by_one", "comparison", "arithmetic", "constant", "swapped_args",
             "negation", "return_var", "boolean_operator")


@dataclasses.dataclass(frozen=True)
class BugSite:
    kind: str
    fixed: str
    buggy: str
    breaks: tuple[str, ...]   # test method names that fail with the bug
    title: str                # the issue title (a symptom, never the fix)
    report: str               # what the reporter saw
    example: tuple[str, ...]  # session lines; the last is an expression


@dataclasses.dataclass(frozen=True)
class ModuleTemplate:
    name: str
    source: str
    tests: str
    sites: tuple[BugSite, ...]


STATS = ModuleTemplate("stats", '''\
"""Descriptive statistics for small lists of numbers."""


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def median(values):
    """Middle value; the mean of the two middle values for even lengths."""
    if not values:
        raise ValueError("median() of an empty sequence")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def variance(values, ddof=0):
    """Population variance by default; ddof=1 gives the sample variance."""
    if len(values) <= ddof:
        raise ValueError("not enough values for the requested ddof")
    centre = mean(values)
    return sum((v - centre) ** 2 for v in values) / (len(values) - ddof)


def moving_average(values, window):
    """Mean of every run of ``window`` consecutive values."""
    if window <= 0:
        raise ValueError("window must be positive")
    averages = []
    for start in range(len(values) - window + 1):
        chunk = values[start:start + window]
        averages.append(sum(chunk) / window)
    return averages
''', '''\
import unittest

from {pkg}.stats import mean, median, moving_average, variance


class TestStats(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([2, 4, 9]), 5)

    def test_mean_empty_raises(self):
        with self.assertRaises(ValueError):
            mean([])

    def test_median_odd_length(self):
        self.assertEqual(median([7, 1, 3]), 3)

    def test_median_even_length(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)

    def test_population_variance(self):
        self.assertAlmostEqual(variance([1, 2, 3, 4]), 1.25)

    def test_sample_variance(self):
        self.assertAlmostEqual(variance([1, 2, 3, 4], ddof=1), 5 / 3)

    def test_moving_average(self):
        self.assertEqual(moving_average([1, 2, 3, 4], 2), [1.5, 2.5, 3.5])

    def test_moving_average_rejects_zero_window(self):
        with self.assertRaises(ValueError):
            moving_average([1, 2], 0)
''', (
    BugSite("off_by_one", "for start in range(len(values) - window + 1):",
            "for start in range(len(values) - window):", ("test_moving_average",),
            "moving_average returns one value too few",
            "The moving average of a series misses the last window.",
            ("moving_average([1, 2, 3, 4], 2)",)),
    BugSite("arithmetic", "return (ordered[mid - 1] + ordered[mid]) / 2",
            "return (ordered[mid - 1] + ordered[mid]) // 2", ("test_median_even_length",),
            "median of an even-length list is wrong",
            "For lists with an even number of values the median comes out as a whole number "
            "that is not the middle of the data.", ("median([4, 1, 3, 2])",)),
    BugSite("constant", "def variance(values, ddof=0):", "def variance(values, ddof=1):",
            ("test_population_variance",), "variance() does not return the population variance",
            "The docstring says the population variance is the default, but calling "
            "variance without ddof gives a larger number.", ("variance([1, 2, 3, 4])",)),
))

TEXT = ModuleTemplate("text", '''\
"""String helpers used across the project."""
import re


def slugify(text, sep="-"):
    """Lower-case words of ``text`` joined by ``sep`` ("Hello World" -> "hello-world")."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return sep.join(words)


def truncate(text, width, suffix="..."):
    """``text`` cut to at most ``width`` characters, ending in ``suffix`` when cut."""
    if width < len(suffix):
        raise ValueError("width is smaller than the suffix")
    if len(text) <= width:
        return text
    return text[:width - len(suffix)] + suffix


def is_blank(text):
    """True when ``text`` is empty or only whitespace."""
    return not bool(text.strip())


def count_words(text):
    """Occurrences of each lower-cased word."""
    counts = {}
    for word in re.findall(r"[a-z']+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts
''', '''\
import unittest

from {pkg}.text import count_words, is_blank, slugify, truncate


class TestText(unittest.TestCase):
    def test_slugify(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_slugify_custom_separator(self):
        self.assertEqual(slugify("Hello World", sep="_"), "hello_world")

    def test_truncate_short_text_unchanged(self):
        self.assertEqual(truncate("abc", 10), "abc")

    def test_truncate_exact_width(self):
        self.assertEqual(truncate("abcde", 5), "abcde")

    def test_truncate_long_text(self):
        self.assertEqual(truncate("abcdefghij", 6), "abc...")

    def test_is_blank(self):
        self.assertTrue(is_blank("  \\t"))

    def test_is_not_blank(self):
        self.assertFalse(is_blank(" x "))

    def test_count_words(self):
        self.assertEqual(count_words("The cat and the hat"),
                         {"the": 2, "cat": 1, "and": 1, "hat": 1})
''', (
    BugSite("constant", 'def slugify(text, sep="-"):', 'def slugify(text, sep="_"):',
            ("test_slugify",), "slugify uses the wrong separator by default",
            "Slugs are supposed to look like 'hello-world' when no separator is given.",
            ('slugify("Hello, World!")',)),
    BugSite("comparison", "if len(text) <= width:", "if len(text) < width:",
            ("test_truncate_exact_width",), "truncate shortens text that already fits",
            "A string whose length equals the width gets an ellipsis although nothing "
            "needs to be cut.", ('truncate("abcde", 5)',)),
    BugSite("off_by_one", "return text[:width - len(suffix)] + suffix",
            "return text[:width - len(suffix) - 1] + suffix", ("test_truncate_long_text",),
            "truncate returns strings shorter than the width",
            "Long strings are cut one character shorter than the requested width.",
            ('truncate("abcdefghij", 6)',)),
    BugSite("negation", "return not bool(text.strip())", "return bool(text.strip())",
            ("test_is_blank", "test_is_not_blank"), "is_blank gives the opposite answer",
            "Whitespace-only strings are reported as not blank, and real text as blank.",
            ('is_blank("   ")',)),
))

INTERVALS = ModuleTemplate("intervals", '''\
"""Integer intervals, list chunking and progress figures."""


def overlaps(a_start, a_end, b_start, b_end):
    """True when the half-open intervals [a_start, a_end) and [b_start, b_end) share a point."""
    return a_start < b_end and b_start < a_end


def merge_intervals(intervals):
    """Merge overlapping or touching (start, end) pairs; the result is sorted."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def chunk(items, size):
    """Consecutive pieces of ``items`` of length ``size`` (the last may be shorter)."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[i:i + size] for i in range(0, len(items), size)]


def percent_of(part, whole):
    """``part`` as a percentage of ``whole``."""
    if whole == 0:
        raise ZeroDivisionError("whole is zero")
    return 100.0 * part / whole


def progress(done, total):
    """Completion percentage rounded to one decimal."""
    return round(percent_of(done, total), 1)
''', '''\
import unittest

from {pkg}.intervals import chunk, merge_intervals, overlaps, percent_of, progress


class TestIntervals(unittest.TestCase):
    def test_overlapping_intervals(self):
        self.assertTrue(overlaps(0, 5, 3, 8))

    def test_disjoint_intervals(self):
        self.assertFalse(overlaps(0, 2, 5, 7))

    def test_merge_overlapping(self):
        self.assertEqual(merge_intervals([(5, 8), (1, 4), (2, 6)]), [(1, 8)])

    def test_merge_touching(self):
        self.assertEqual(merge_intervals([(1, 3), (3, 5)]), [(1, 5)])

    def test_merge_keeps_gaps(self):
        self.assertEqual(merge_intervals([(4, 5), (1, 2)]), [(1, 2), (4, 5)])

    def test_chunk(self):
        self.assertEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])

    def test_chunk_even(self):
        self.assertEqual(chunk([1, 2, 3, 4], 2), [[1, 2], [3, 4]])

    def test_chunk_rejects_zero(self):
        with self.assertRaises(ValueError):
            chunk([1], 0)

    def test_percent_of(self):
        self.assertEqual(percent_of(1, 8), 12.5)

    def test_progress(self):
        self.assertEqual(progress(1, 3), 33.3)
''', (
    BugSite("boolean_operator", "return a_start < b_end and b_start < a_end",
            "return a_start < b_end or b_start < a_end", ("test_disjoint_intervals",),
            "overlaps() says far-apart intervals overlap",
            "Two intervals with a gap between them are reported as overlapping.",
            ("overlaps(0, 2, 5, 7)",)),
    BugSite("comparison", "if merged and start <= merged[-1][1]:",
            "if merged and start < merged[-1][1]:", ("test_merge_touching",),
            "merge_intervals keeps touching intervals apart",
            "Intervals where one ends exactly where the next starts should be merged, "
            "as the docstring says.", ("merge_intervals([(1, 3), (3, 5)])",)),
    BugSite("off_by_one", "for i in range(0, len(items), size)]",
            "for i in range(0, len(items) - 1, size)]", ("test_chunk",),
            "chunk() loses the last item of odd-length lists",
            "When the list does not split evenly the final short piece is missing.",
            ("chunk([1, 2, 3, 4, 5], 2)",)),
    BugSite("swapped_args", "return round(percent_of(done, total), 1)",
            "return round(percent_of(total, done), 1)", ("test_progress",),
            "progress() reports more than 100 percent",
            "One task out of three done should be about a third, not several hundred percent.",
            ("progress(1, 3)",)),
))

INVENTORY = ModuleTemplate("inventory", '''\
"""A small in-memory stock keeper."""


class Inventory:
    """Counts of items by name."""

    def __init__(self):
        self._counts = {}

    def add(self, item, quantity=1):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._counts[item] = self._counts.get(item, 0) + quantity

    def remove(self, item, quantity=1):
        """Take ``quantity`` of ``item`` out; returns how many are left."""
        available = self._counts.get(item, 0)
        if quantity > available:
            raise KeyError(f"only {available} of {item!r} in stock")
        left = available - quantity
        if left:
            self._counts[item] = left
        else:
            del self._counts[item]
        return left

    def count(self, item):
        return self._counts.get(item, 0)

    def total(self):
        return sum(self._counts.values())

    def most_common(self, n):
        """The ``n`` items with the largest counts as (item, count), ties by name."""
        ranked = sorted(self._counts.items(), key=lambda pair: (-pair[1], pair[0]))
        top = ranked[:n]
        return top
''', '''\
import unittest

from {pkg}.inventory import Inventory


class TestInventory(unittest.TestCase):
    def test_add_and_count(self):
        inv = Inventory()
        inv.add("apple", 3)
        inv.add("apple")
        self.assertEqual(inv.count("apple"), 4)

    def test_add_rejects_non_positive(self):
        with self.assertRaises(ValueError):
            Inventory().add("apple", 0)

    def test_remove_returns_remaining(self):
        inv = Inventory()
        inv.add("apple", 5)
        self.assertEqual(inv.remove("apple", 2), 3)
        self.assertEqual(inv.count("apple"), 3)

    def test_remove_everything(self):
        inv = Inventory()
        inv.add("apple", 2)
        self.assertEqual(inv.remove("apple", 2), 0)
        self.assertEqual(inv.count("apple"), 0)

    def test_remove_too_many_raises(self):
        inv = Inventory()
        inv.add("apple", 1)
        with self.assertRaises(KeyError):
            inv.remove("apple", 2)

    def test_total(self):
        inv = Inventory()
        inv.add("apple", 2)
        inv.add("pear", 3)
        self.assertEqual(inv.total(), 5)

    def test_most_common(self):
        inv = Inventory()
        for item, quantity in [("apple", 1), ("kiwi", 5), ("pear", 3)]:
            inv.add(item, quantity)
        self.assertEqual(inv.most_common(2), [("kiwi", 5), ("pear", 3)])

    def test_most_common_more_than_available(self):
        inv = Inventory()
        inv.add("apple", 1)
        self.assertEqual(inv.most_common(3), [("apple", 1)])
''', (
    BugSite("arithmetic", "left = available - quantity", "left = available + quantity",
            ("test_remove_returns_remaining", "test_remove_everything"),
            "Inventory.remove increases the stock",
            "After removing items the inventory holds more of them than before.",
            ("inv = Inventory()", 'inv.add("apple", 5)', 'inv.remove("apple", 2)')),
    BugSite("comparison", "if quantity > available:", "if quantity >= available:",
            ("test_remove_everything",), "cannot remove the last items of a kind",
            "Taking out exactly the number of items in stock raises an error.",
            ("inv = Inventory()", 'inv.add("apple", 2)', 'inv.remove("apple", 2)')),
    BugSite("return_var", "return top", "return ranked", ("test_most_common",),
            "most_common(n) returns more than n items",
            "Asking for the top two items gives back every item in stock.",
            ("inv = Inventory()", 'inv.add("apple", 1)', 'inv.add("kiwi", 5)',
             'inv.add("pear", 3)', "inv.most_common(2)")),
    BugSite("constant", "def add(self, item, quantity=1):", "def add(self, item, quantity=2):",
            ("test_add_and_count",), "Inventory.add without a quantity adds too many",
            "Adding a single item without giving a quantity counts it more than once.",
            ("inv = Inventory()", 'inv.add("apple")', 'inv.count("apple")')),
))
