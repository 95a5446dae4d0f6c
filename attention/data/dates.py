"""Date normalisation: a translation task whose word alignment is known exactly.

A date written the way people write it in some language is translated to ISO 8601::

    zh  1984年3月27日星期二        ->  1 9 8 4 - 0 3 - 2 7
    fr  mardi 27 mars 1984
    de  Dienstag, 27. März 1984
    en  Tuesday, March 27, 1984

The sources are CLDR's date formats (``full``, ``long``, ``medium``) rendered by ``babel``
(BSD). ``short`` is left out: its two-digit year (``3/27/84``) does not determine the century.

Tokens. The target is the ISO string, one token per character (10 tokens). The source is
cut where the CLDR pattern is cut: each date field (year, month, day, weekday) is one token
-- ``1984``, ``mars``, ``03``, ``27``, ``星期二`` -- and the text between fields is split into
words and single punctuation marks (``年``, ``,``, ``.``, ``de``).

Gold links, following Och & Ney (2003): a link ``(j, i)`` joins source token ``j`` to target
position ``i``. *Sure* links ``S``: the year token to the four year characters, the month
token (name or number) to the two month characters, the day token to the two day characters.
*Possible* links ``P``, ``P ⊇ S``: ``S`` plus the marker written directly after a number
(``年 月 日``, the German ordinal dot in ``27.``) to that number's characters. The weekday,
punctuation and the ISO hyphens link to nothing. :func:`attention.metrics.aer` scores predicted links against
them: ``AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|)``, 0 for a perfect alignment.
"""

from __future__ import annotations

import datetime
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["DatePair", "date_pair", "make_dates", "STYLES"]

STYLES = ("full", "long", "medium")
FIELD_TARGET = {"y": range(0, 4), "M": range(5, 7), "L": range(5, 7), "d": range(8, 10)}
CHUNK = re.compile(r"\w+|[^\w\s]")  # literal text between fields: words, single marks

Links = frozenset  # of (source position, target position) tuples


@dataclass
class DatePair:
    """One date: source tokens, ISO target characters, and gold links ``(j, i)``."""

    src: tuple[str, ...]  # source tokens: ("1984", "年", "3", "月", "27", "日", "星期二")
    tgt: tuple[str, ...]  # ISO characters, ("1", "9", "8", "4", "-", "0", "3", "-", "2", "7")
    sure: Links  # S: (j, i) links that must be there
    possible: Links  # P ⊇ S: links that may be there without penalty
    language: str = ""  # CLDR locale, "zh", "fr", ...
    style: str = ""  # CLDR format, "full", "long" or "medium"
    date: datetime.date | None = field(default=None, compare=False)

    def __iter__(self):  # so that `src, tgt = pair` works like a plain tuple
        return iter((self.src, self.tgt))


def date_pair(date: datetime.date, language: str, style: str = "full") -> DatePair:
    """The :class:`DatePair` of ``date`` written in ``language``'s CLDR ``style``."""
    from babel.dates import format_date, get_date_format, tokenize_pattern  # optional dependency

    if not 1000 <= date.year <= 9999:  # ISO pads a year to 4 digits, CLDR's "y" does not
        raise ValueError(f"years must have four digits, got {date}")
    pattern = get_date_format(style, locale=language).pattern
    src: list[str] = []
    sure, possible = set(), set()
    previous_field = None  # the date field written just before, if nothing came between
    for kind, value in tokenize_pattern(pattern):
        if kind == "field":
            letter, count = value
            text = format_date(date, letter * count, locale=language)
            targets = FIELD_TARGET.get(letter, ())  # weekday, era ...: no target
            for word in text.split():
                sure.update((len(src), i) for i in targets)
                src.append(word)
            previous_field = letter if targets else None
            continue
        for k, match in enumerate(CHUNK.finditer(value)):
            token = match.group()
            attached = k == 0 and match.start() == 0 and previous_field is not None
            if attached and (token.isalpha() or token == "."):  # 年 月 日, the ordinal "27."
                possible.update((len(src), i) for i in FIELD_TARGET[previous_field])
            src.append(token)
        previous_field = None
    tgt = tuple(date.isoformat())
    return DatePair(tuple(src), tgt, frozenset(sure), frozenset(sure | possible), language, style, date)


def make_dates(
    n: int,
    languages: Sequence[str] = ("zh", "fr", "de", "en"),
    seed: int = 0,
    styles: Sequence[str] = STYLES,
    years: tuple[int, int] = (1900, 2099),
) -> list[DatePair]:
    """``n`` random dates in random languages and styles, the same for the same ``seed``.

    Dates are uniform between 1 January ``years[0]`` and 31 December ``years[1]``.
    """
    rng = random.Random(seed)
    first = datetime.date(years[0], 1, 1)
    span = (datetime.date(years[1], 12, 31) - first).days + 1
    pairs = []
    for _ in range(n):
        language, style = rng.choice(languages), rng.choice(styles)
        date = first + datetime.timedelta(days=rng.randrange(span))
        pairs.append(date_pair(date, language, style))
    return pairs
