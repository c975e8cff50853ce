"""The programming tasks: a brief the coder sees, and a specification only the user holds.

Each task comes from a family (one kind of function, say "format a price") and fixes 1-3
**hidden details** to values a guesser would not pick (the euro sign, a comma as decimal
separator, the remainder going to the last person). The brief never states them; the user
simulator reveals one per relevant question. The hidden tests are calls whose expected values
come from the reference solution, and the inputs are chosen so that guessing any hidden detail
wrong fails at least one of them (`problems()` checks that for every task, and the tests run it).

A detail that is not hidden in a task takes its default value, which is also what a coder who
did not ask would guess: the brief is under-specified only where the task says so.

Code is generated as text from one template per family, because committed code is text: the
sandbox runs the reference, the "guessed detail" variants and anything a policy writes the same
way. Expected values are computed here, in the trusted process, by running the reference
solution, which is our own code.
"""

from __future__ import annotations

import itertools
import random
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from coding_agent.sandbox import Raises, TestCase, encode_value

TASKS_PER_FAMILY = 5
TASK_SEED = 11  # which hidden-detail combinations each family contributes; fixed so ids are stable


@dataclass(frozen=True)
class Detail:
    """One thing the brief leaves open: its default (the guess) and what the user says for each value."""

    key: str
    question: str  # what a coder asks to learn it
    keywords: tuple[str, ...]  # words that make a question about this detail (the simulator matches them)
    default: Any
    says: Mapping[Any, str]  # value -> the user's answer; includes the default

    def answer(self, value: Any) -> str:
        return self.says[value]


@dataclass(frozen=True)
class Family:
    name: str
    entry_point: str
    brief: str
    details: tuple[Detail, ...]
    render: Callable[[Mapping[str, Any]], str]  # full parameters -> source code
    inputs: tuple[tuple[Any, ...], ...]

    def defaults(self) -> dict[str, Any]:
        return {d.key: d.default for d in self.details}

    def detail(self, key: str) -> Detail:
        return next(d for d in self.details if d.key == key)


@dataclass(frozen=True)
class Task:
    """One task: the brief, the hidden specification, the entry point and the hidden tests."""

    id: str
    family: str
    brief: str
    entry_point: str
    hidden: Mapping[str, Any]  # detail key -> the value the user wants (1 to 3 of them)
    params: Mapping[str, Any]  # every detail's value (hidden ones, plus defaults)
    details: tuple[Detail, ...] = field(repr=False)
    tests: tuple[TestCase, ...] = field(repr=False)
    render: Callable[[Mapping[str, Any]], str] = field(repr=False)

    @property
    def hidden_details(self) -> tuple[Detail, ...]:
        return tuple(d for d in self.details if d.key in self.hidden)

    def spec(self) -> list[str]:
        """The full specification in the user's words: one sentence per hidden detail."""
        return [d.answer(self.hidden[d.key]) for d in self.hidden_details]

    @property
    def reference(self) -> str:
        return self.render(self.params)

    def code_knowing(self, known: Sequence[str] | set[str] | frozenset[str]) -> str:
        """The code a coder writes knowing the hidden details in `known` and guessing the rest."""
        params = dict(self.params)
        for detail in self.hidden_details:
            if detail.key not in known:
                params[detail.key] = detail.default
        return self.render(params)

    def guessed_variants(self) -> dict[str, str]:
        """detail key -> the reference with only that detail guessed (each must fail a test)."""
        known = set(self.hidden)
        return {key: self.code_knowing(known - {key}) for key in self.hidden}


def _src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


# --- the families --------------------------------------------------------------------------------
def _price(p: Mapping[str, Any]) -> str:
    return _src(f"""
        def format_price(amount):
            text = f"{{amount:,.{p["decimals"]}f}}".replace(",", "_")
            text = text.replace(".", {p["decimal_sep"]!r}).replace("_", {p["group_sep"]!r})
            return {p["symbol"]!r} + text
        """)


def _slug(p: Mapping[str, Any]) -> str:
    return _src(f"""
        import re

        def slugify(title):
            words = re.findall(r"[A-Za-z0-9]+", title.lower())
            if not {p["keep_digits"]!r}:
                words = [w for w in (re.sub(r"[0-9]", "", w) for w in words) if w]
            slug = {p["separator"]!r}.join(words)
            if {p["max_length"]!r}:
                slug = slug[:{p["max_length"]!r}].rstrip({p["separator"]!r})
            return slug
        """)


def _median(p: Mapping[str, Any]) -> str:
    empty = {"raise": "raise ValueError('median of an empty list')", "none": "return None", "zero": "return 0"}[
        p["empty"]
    ]
    even = {"mean": "(xs[m - 1] + xs[m]) / 2", "lower": "xs[m - 1]", "upper": "xs[m]"}[p["even"]]
    return _src(f"""
        def median(values):
            xs = sorted(values)
            if not xs:
                {empty}
            m = len(xs) // 2
            if len(xs) % 2:
                return xs[m]
            return {even}
        """)


def _grade(p: Mapping[str, Any]) -> str:
    return _src(f"""
        def letter_grade(score):
            if {p["round_first"]!r}:
                score = int(score + 0.5)
            for cutoff, letter in zip({p["cutoffs"]!r}, "ABCD"):
                if score >= cutoff:
                    return letter
            return {p["fail"]!r}
        """)


def _bill(p: Mapping[str, Any]) -> str:
    return _src(f"""
        def split_bill(total_cents, people):
            total = total_cents + (total_cents * {p["tip_percent"]!r}) // 100
            share, extra = divmod(total, people)
            shares = [share] * people
            order = range(extra) if {p["remainder"]!r} == "first" else range(people - extra, people)
            for i in order:
                shares[i] += 1
            return shares
        """)


def _truncate(p: Mapping[str, Any]) -> str:
    return _src(f"""
        def truncate(text, limit):
            if len(text) <= limit:
                return text
            marker = {p["marker"]!r}
            room = limit - len(marker) if {p["marker_counts"]!r} else limit
            cut = text[:room]
            if {p["whole_words"]!r} and " " in cut:
                cut = cut[:cut.rindex(" ")]
            return cut.rstrip() + marker
        """)


def _words(p: Mapping[str, Any]) -> str:
    return _src(f"""
        import re

        def word_counts(text):
            if {p["ignore_case"]!r}:
                text = text.lower()
            words = re.findall(r"[A-Za-z']+", text) if {p["strip_punctuation"]!r} else text.split()
            counts = {{}}
            for w in words:
                if len(w) >= {p["min_length"]!r}:
                    counts[w] = counts.get(w, 0) + 1
            return counts
        """)


def _temperature(p: Mapping[str, Any]) -> str:
    formula = {"fahrenheit": "celsius * 9 / 5 + 32", "kelvin": "celsius + 273.15"}[p["target"]]
    return _src(f"""
        def convert_temperature(celsius):
            if celsius < -273.15:
                {"raise ValueError('below absolute zero')" if p["check_absolute_zero"] else "pass"}
            return round({formula}, {p["decimals"]!r})
        """)


def _username(p: Mapping[str, Any]) -> str:
    allowed = "abcdefghijklmnopqrstuvwxyz0123456789" + p["extra_chars"]
    return _src(f"""
        def is_valid_username(name):
            if not {p["min_length"]!r} <= len(name) <= 16:
                return False
            if {p["letter_first"]!r} and not name[:1].isalpha():
                return False
            return all(c in {allowed!r} for c in name.lower())
        """)


def _dedupe(p: Mapping[str, Any]) -> str:
    return _src(f"""
        def dedupe(items):
            seen, kept = set(), []
            ordered = list(items) if {p["keep"]!r} == "first" else list(reversed(items))
            for item in ordered:
                key = item.lower() if {p["ignore_case"]!r} else item
                if key not in seen:
                    seen.add(key)
                    kept.append(item)
            return kept if {p["keep"]!r} == "first" else list(reversed(kept))
        """)


def _names(p: Mapping[str, Any]) -> str:
    key = {"first": "name", "last": "name.split()[-1] + ' ' + name"}[p["by"]]
    return _src(f"""
        def sort_names(names):
            def key(name):
                k = {key}
                return k.lower() if {p["ignore_case"]!r} else k
            return sorted(names, key=key, reverse={p["descending"]!r})
        """)


def _chunk(p: Mapping[str, Any]) -> str:
    bad = "raise ValueError('size must be positive')" if p["bad_size"] == "raise" else "return []"
    return _src(f"""
        def chunk(items, size):
            if size <= 0:
                {bad}
            chunks = [list(items[i:i + size]) for i in range(0, len(items), size)]
            if chunks and len(chunks[-1]) < size:
                if {p["short_last"]!r} == "drop":
                    chunks.pop()
                elif {p["short_last"]!r} == "pad":
                    chunks[-1] += [None] * (size - len(chunks[-1]))
            return chunks
        """)


def _mask(p: Mapping[str, Any]) -> str:
    return _src(f"""
        def mask_email(email):
            user, _, domain = email.partition("@")
            keep = {p["visible"]!r}
            masked = user[:keep] + {p["mask_char"]!r} * max(len(user) - keep, 1)
            if {p["mask_domain"]!r}:
                name, dot, tld = domain.rpartition(".")
                domain = {p["mask_char"]!r} * len(name) + dot + tld
            return masked + "@" + domain
        """)


def _duration(p: Mapping[str, Any]) -> str:
    return _src(f"""
        import re

        def parse_duration(text):
            parts = re.fullmatch(r"(?:(\\d+)h)?\\s*(?:(\\d+)m)?\\s*(?:(\\d+)s)?", text.strip())
            if not parts or not any(parts.groups()):
                {"raise ValueError('not a duration: ' + repr(text))" if p["bad_input"] == "raise" else "return None"}
            h, m, s = (int(g or 0) for g in parts.groups())
            seconds = h * 3600 + m * 60 + s
            return seconds if {p["unit"]!r} == "seconds" else {"seconds // 60" if p["unit"] == "minutes_floor" else "round(seconds / 60, 2)"}
        """)


FAMILIES: tuple[Family, ...] = (
    Family(
        "price",
        "format_price",
        "Write format_price(amount) that turns a number into a price string for our shop's receipts.",
        (
            Detail(
                "symbol",
                "Which currency symbol should the price start with?",
                ("currency", "symbol"),
                "$",
                {"$": "Dollars: start with $.", "€": "Euros: start with €.", "£": "Pounds: start with £."},
            ),
            Detail(
                "decimal_sep",
                "Which decimal separator do you use?",
                ("separator", "comma", "decimal separator", "decimal sign"),
                ".",
                {".": "A dot before the cents.", ",": "A comma before the cents, like 3,50."},
            ),
            Detail(
                "group_sep",
                "How should thousands be grouped?",
                ("thousand", "group"),
                ",",
                {
                    ",": "Commas between thousands.",
                    " ": "A space between thousands, like 1 234.",
                    "": "No grouping at all.",
                },
            ),
            Detail(
                "decimals",
                "How many decimal places?",
                ("decimal places", "how many decimal", "cents"),
                2,
                {2: "Always two decimals.", 0: "Whole amounts only, no decimals."},
            ),
        ),
        _price,
        ((3.5,), (1234.5,), (0.125,), (1000000,), (19.99,)),
    ),
    Family(
        "slug",
        "slugify",
        "Write slugify(title) that turns an article title into a URL slug.",
        (
            Detail(
                "separator",
                "What character should separate the words?",
                ("separator", "dash", "hyphen", "underscore"),
                "-",
                {"-": "Hyphens between words.", "_": "Underscores between words."},
            ),
            Detail(
                "max_length",
                "Is there a maximum length?",
                ("length", "long", "limit"),
                0,
                {
                    0: "Any length.",
                    20: "At most 20 characters, without a trailing separator.",
                    12: "At most 12 characters, without a trailing separator.",
                },
            ),
            Detail(
                "keep_digits",
                "Should digits stay in the slug?",
                ("digit", "number"),
                True,
                {True: "Keep the digits.", False: "Drop every digit."},
            ),
        ),
        _slug,
        (
            ("Hello World",),
            ("Top 10 Python Tips for 2024 Beginners",),
            ("  Already-slugged_title  ",),
            ("Release v2 Notes",),
            ("Go",),
        ),
    ),
    Family(
        "median",
        "median",
        "Write median(values) that returns the median of a list of numbers.",
        (
            Detail(
                "even",
                "What should happen with an even number of values?",
                ("even", "middle", "two"),
                "mean",
                {
                    "mean": "The mean of the two middle values.",
                    "lower": "The lower of the two middle values.",
                    "upper": "The upper of the two middle values.",
                },
            ),
            Detail(
                "empty",
                "What should an empty list give?",
                ("empty", "no values", "nothing"),
                "raise",
                {"raise": "Raise ValueError.", "none": "Return None.", "zero": "Return 0."},
            ),
        ),
        _median,
        (([3, 1, 2],), ([4, 1, 3, 2],), ([],), ([5],), ([1, 2],), ([10, 20, 30, 40, 50, 60],)),
    ),
    Family(
        "grade",
        "letter_grade",
        "Write letter_grade(score) that maps an exam score out of 100 to a letter.",
        (
            Detail(
                "cutoffs",
                "What are the cutoffs for each letter?",
                ("cutoff", "threshold", "boundar"),
                (90, 80, 70, 60),
                {
                    (90, 80, 70, 60): "A from 90, B from 80, C from 70, D from 60.",
                    (93, 85, 77, 70): "A from 93, B from 85, C from 77, D from 70.",
                },
            ),
            Detail(
                "round_first",
                "Should scores be rounded before grading?",
                ("round", "fraction", "decimal"),
                False,
                {
                    False: "No rounding: 89.6 is a B.",
                    True: "Round to the nearest whole point first: 89.6 counts as 90.",
                },
            ),
            Detail(
                "fail",
                "What letter is a failing score?",
                ("fail", "below", "lowest"),
                "F",
                {"F": "F.", "E": "E, we do not use F."},
            ),
        ),
        _grade,
        ((95,), (89.6,), (84,), (72,), (65,), (50,), (92.5,)),
    ),
    Family(
        "bill",
        "split_bill",
        "Write split_bill(total_cents, people) that splits a restaurant bill into equal shares in cents.",
        (
            Detail(
                "remainder",
                "Who pays the leftover cents?",
                ("leftover", "remainder", "extra cent"),
                "first",
                {
                    "first": "The first people in the list pay one extra cent each.",
                    "last": "The last people in the list pay one extra cent each.",
                },
            ),
            Detail(
                "tip_percent",
                "Should a tip be added?",
                ("tip", "service"),
                0,
                {
                    0: "No tip.",
                    10: "Add a 10% tip (rounded down to the cent) before splitting.",
                    15: "Add a 15% tip (rounded down to the cent) before splitting.",
                },
            ),
        ),
        _bill,
        ((1000, 3), (1001, 2), (999, 4), (500, 1), (700, 3)),
    ),
    Family(
        "truncate",
        "truncate",
        "Write truncate(text, limit) that shortens long text for a preview.",
        (
            Detail(
                "marker",
                "How should you mark that the text was cut?",
                ("mark", "ellipsis", "dots"),
                "...",
                {"...": "Three dots.", "…": "The single ellipsis character …", " [more]": "The text ' [more]'."},
            ),
            Detail(
                "marker_counts",
                "Does the marker count towards the limit?",
                ("count", "limit", "include"),
                True,
                {
                    True: "Yes, the whole result fits in the limit.",
                    False: "No, the limit applies to the text before the marker.",
                },
            ),
            Detail(
                "whole_words",
                "May a word be cut in half?",
                ("word", "half", "break"),
                False,
                {False: "Yes, cut anywhere.", True: "No, cut at the last space."},
            ),
        ),
        _truncate,
        (
            ("short", 10),
            ("The quick brown fox jumps", 12),
            ("abcdefghijklmnop", 8),
            ("one two three four", 11),
            ("exactly ten", 11),
        ),
    ),
    Family(
        "words",
        "word_counts",
        "Write word_counts(text) that counts how often each word appears.",
        (
            Detail(
                "ignore_case",
                "Should 'The' and 'the' count as the same word?",
                ("case", "capital", "upper"),
                True,
                {True: "Yes, count case-insensitively (report lower case).", False: "No, case matters."},
            ),
            Detail(
                "strip_punctuation",
                "What about punctuation attached to words?",
                ("punctuation", "comma", "period"),
                True,
                {
                    True: "Strip it: only letters and apostrophes make words.",
                    False: "Keep it: split on whitespace only.",
                },
            ),
            Detail(
                "min_length",
                "Should short words be skipped?",
                ("short", "skip", "length"),
                1,
                {1: "Count every word.", 3: "Skip words shorter than 3 letters."},
            ),
        ),
        _words,
        (("The cat and the hat.",), ("a b a",), ("Go, go, GO!",), ("it's an ox",), ("Hello hello world",)),
    ),
    Family(
        "temperature",
        "convert_temperature",
        "Write convert_temperature(celsius) for our weather station's display.",
        (
            Detail(
                "target",
                "Which unit should it convert to?",
                ("unit", "fahrenheit", "kelvin", "convert to"),
                "fahrenheit",
                {"fahrenheit": "Fahrenheit.", "kelvin": "Kelvin."},
            ),
            Detail(
                "decimals",
                "How many decimal places?",
                ("decimal", "round", "places", "precision"),
                1,
                {1: "One decimal place.", 0: "Whole degrees.", 2: "Two decimal places."},
            ),
            Detail(
                "check_absolute_zero",
                "What about impossible temperatures below absolute zero?",
                ("absolute", "impossible", "invalid", "below"),
                False,
                {False: "Convert them anyway.", True: "Raise ValueError."},
            ),
        ),
        _temperature,
        ((0,), (100,), (-40,), (36.66,), (21.35,), (-300,)),
    ),
    Family(
        "username",
        "is_valid_username",
        "Write is_valid_username(name) that checks a new user name at sign-up.",
        (
            Detail(
                "min_length",
                "What is the minimum length?",
                ("minimum", "length", "short"),
                3,
                {3: "At least 3 characters.", 5: "At least 5 characters."},
            ),
            Detail(
                "extra_chars",
                "Which characters besides letters and digits are allowed?",
                ("character", "underscore", "symbol", "allowed"),
                "_",
                {
                    "_": "Underscores only.",
                    "": "Nothing else: letters and digits only.",
                    "_.-": "Underscores, dots and hyphens.",
                },
            ),
            Detail(
                "letter_first",
                "Must it start with a letter?",
                ("start", "first", "begin"),
                False,
                {False: "No, it may start with anything allowed.", True: "Yes, it must start with a letter."},
            ),
        ),
        _username,
        (("bob",), ("al",), ("anna_b",), ("9lives",), ("jo.doe",), ("abcd",), ("x-men_2",)),
    ),
    Family(
        "dedupe",
        "dedupe",
        "Write dedupe(items) that removes duplicate strings from a list.",
        (
            Detail(
                "keep",
                "Which copy of a duplicate should stay?",
                ("copy", "keep", "occurrence"),
                "first",
                {"first": "Keep the first occurrence.", "last": "Keep the last occurrence, in its position."},
            ),
            Detail(
                "ignore_case",
                "Are 'Apple' and 'apple' duplicates?",
                ("case", "capital", "upper"),
                False,
                {False: "No, case matters.", True: "Yes, compare case-insensitively."},
            ),
        ),
        _dedupe,
        (
            (["a", "b", "a"],),
            (["Apple", "apple", "pear"],),
            (["x", "y", "x", "z", "y"],),
            ([],),
            (["B", "a", "b", "A"],),
        ),
    ),
    Family(
        "names",
        "sort_names",
        "Write sort_names(names) that sorts a list of full names for the staff directory.",
        (
            Detail(
                "by",
                "Sort by first name or last name?",
                ("first name", "last name", "surname", "by"),
                "first",
                {"first": "By the whole name as written.", "last": "By last name, then the whole name."},
            ),
            Detail(
                "descending",
                "Ascending or descending?",
                ("ascending", "descending", "order", "reverse"),
                False,
                {False: "A to Z.", True: "Z to A."},
            ),
            Detail(
                "ignore_case",
                "Should case affect the order?",
                ("case", "capital", "upper"),
                False,
                {False: "Plain string order (capitals first).", True: "Ignore case."},
            ),
        ),
        _names,
        (
            (["Ada Lovelace", "Alan Turing", "Grace Hopper"],),
            (["bob Zed", "Al Young"],),
            (["Zoe Adams", "amy Brown", "Carl Adams"],),
            (["Solo"],),
        ),
    ),
    Family(
        "chunk",
        "chunk",
        "Write chunk(items, size) that splits a list into pieces of the given size.",
        (
            Detail(
                "short_last",
                "What about a last piece that is too short?",
                ("last", "short", "leftover", "remainder"),
                "keep",
                {"keep": "Keep it as it is.", "drop": "Drop it.", "pad": "Pad it with None to the full size."},
            ),
            Detail(
                "bad_size",
                "What if size is zero or negative?",
                ("zero", "negative", "invalid", "size"),
                "raise",
                {"raise": "Raise ValueError.", "empty": "Return an empty list."},
            ),
        ),
        _chunk,
        (([1, 2, 3, 4, 5], 2), ([1, 2, 3, 4], 2), ([1, 2, 3], 5), ([1, 2], 0), ([], 3)),
    ),
    Family(
        "mask",
        "mask_email",
        "Write mask_email(email) that hides most of an e-mail address for display.",
        (
            Detail(
                "visible",
                "How many characters of the name stay visible?",
                ("visible", "how many", "characters", "show"),
                1,
                {1: "Only the first character.", 2: "The first two characters."},
            ),
            Detail(
                "mask_char",
                "Which character hides the rest?",
                ("mask character", "hide with", "asterisk", "symbol"),
                "*",
                {"*": "Asterisks.", "#": "Hash signs."},
            ),
            Detail(
                "mask_domain",
                "Should the domain be hidden too?",
                ("domain",),
                False,
                {
                    False: "No, show the domain.",
                    True: "Yes, hide the domain name but keep the top-level part, like ####.com.",
                },
            ),
        ),
        _mask,
        (("alice@example.com",), ("bo@x.org",), ("j@mail.net",), ("zachary@corp.co.uk",)),
    ),
    Family(
        "duration",
        "parse_duration",
        "Write parse_duration(text) that reads durations like '1h30m' from a config file.",
        (
            Detail(
                "unit",
                "In which unit should the result be?",
                ("unit", "seconds", "minutes"),
                "seconds",
                {
                    "seconds": "Whole seconds.",
                    "minutes_floor": "Whole minutes, rounded down.",
                    "minutes": "Minutes, to two decimals.",
                },
            ),
            Detail(
                "bad_input",
                "What should invalid text give?",
                ("invalid", "bad", "error", "wrong"),
                "raise",
                {"raise": "Raise ValueError.", "none": "Return None."},
            ),
        ),
        _duration,
        (("1h30m",), ("45s",), ("2m5s",), ("soon",), ("3h",), ("",)),
    ),
)


def _combinations(family: Family) -> list[dict[str, Any]]:
    """Every way to hide 1-3 details with non-default values, in a fixed order."""
    found = []
    for count in (1, 2, 3):
        for keys in itertools.combinations([d.key for d in family.details], count):
            choices = [[v for v in family.detail(k).says if v != family.detail(k).default] for k in keys]
            for values in itertools.product(*choices):
                found.append(dict(zip(keys, values)))
    return found


def evaluate_trusted(source: str, entry_point: str, args: tuple[Any, ...]) -> Any:
    """Call `entry_point` of OUR OWN `source` in this process (reference and guessed variants only, never model code)."""
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<reference {entry_point}>", "exec"), namespace)  # our own reference code
    try:
        return namespace[entry_point](*args)
    except Exception as exc:  # noqa: BLE001 - an expected exception is part of the spec
        return Raises(type(exc).__name__)


def _outputs(source: str, entry_point: str, inputs: Sequence[tuple[Any, ...]]) -> list[Any]:
    return [_record(evaluate_trusted(source, entry_point, args)) for args in inputs]


def _record(value: Any) -> Any:
    return value.record() if isinstance(value, Raises) else encode_value(value)


def _make_task(family: Family, hidden: dict[str, Any], index: int) -> Task:
    params = {**family.defaults(), **hidden}
    reference = family.render(params)
    tests = tuple(TestCase(args, evaluate_trusted(reference, family.entry_point, args)) for args in family.inputs)
    return Task(
        id=f"{family.name}_{index:02d}",
        family=family.name,
        brief=family.brief,
        entry_point=family.entry_point,
        hidden=hidden,
        params=params,
        details=family.details,
        tests=tests,
        render=family.render,
    )


def _distinguishes(family: Family, hidden: dict[str, Any]) -> bool:
    """True if guessing any one hidden detail changes at least one test's outcome (checked in-process)."""
    params = {**family.defaults(), **hidden}
    want = _outputs(family.render(params), family.entry_point, family.inputs)
    for key in hidden:
        guessed = {**params, key: family.detail(key).default}
        if _outputs(family.render(guessed), family.entry_point, family.inputs) == want:
            return False
    return True


@cache
def all_tasks() -> tuple[Task, ...]:
    """The task set: TASKS_PER_FAMILY per family, mixing 1, 2 and 3 hidden details."""
    rng = random.Random(TASK_SEED)
    tasks = []
    for family in FAMILIES:
        usable = [h for h in _combinations(family) if _distinguishes(family, h)]
        by_count = {n: [h for h in usable if len(h) == n] for n in (1, 2, 3)}
        for pool in by_count.values():
            rng.shuffle(pool)
        chosen: list[dict[str, Any]] = []
        # Round-robin over 1, 2, 3 hidden details so every family has easy and hard tasks.
        while len(chosen) < TASKS_PER_FAMILY and any(by_count.values()):
            for n in (1, 2, 3):
                if by_count[n] and len(chosen) < TASKS_PER_FAMILY:
                    chosen.append(by_count[n].pop())
        tasks.extend(_make_task(family, hidden, i) for i, hidden in enumerate(chosen))
    return tuple(tasks)


def get(task_id: str) -> Task:
    """The task named `task_id` ("price_03"); KeyError naming a few known ids otherwise."""
    for task in all_tasks():
        if task.id == task_id:
            return task
    known = ", ".join(t.id for t in all_tasks()[:5])
    raise KeyError(f"no coding task {task_id!r}; ids look like {known}, ...")


def problems(tasks: Sequence[Task] | None = None) -> list[str]:
    """Everything wrong with the task set (in-process check; the tests also run it in the sandbox)."""
    found = []
    tasks = all_tasks() if tasks is None else tasks
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        found.append("task ids are not unique")
    for task in tasks:
        where = f"task {task.id}"
        if not 1 <= len(task.hidden) <= 3:
            found.append(f"{where}: {len(task.hidden)} hidden details, expected 1 to 3")
        if not 4 <= len(task.tests) <= 8:
            found.append(f"{where}: {len(task.tests)} hidden tests, expected 4 to 8")
        if any(detail.answer(task.hidden[detail.key]) in task.brief for detail in task.hidden_details):
            found.append(f"{where}: the brief gives a hidden detail away")
        want = [t.expected_record() for t in task.tests]
        if _outputs(task.reference, task.entry_point, [t.args for t in task.tests]) != want:
            found.append(f"{where}: the reference does not pass its own tests")
        for key, code in task.guessed_variants().items():
            if _outputs(code, task.entry_point, [t.args for t in task.tests]) == want:
                found.append(f"{where}: guessing {key!r} passes every test, so the tests cannot tell")
    return found
