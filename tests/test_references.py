"""The survey's nineteen references all resolve, and every {cite} of the book names an entry."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIB = (ROOT / "book" / "references.bib").read_text()
KEYS = set(re.findall(r"^@\w+\{([^,\s]+),", BIB, flags=re.M))


def test_the_survey_list_has_nineteen_resolved_entries():
    text = (ROOT / "book" / "12-references.md").read_text()
    rows = re.findall(r"^\| \[(\d+)\] \|.*\{cite\}`([^`]+)` \|$", text, flags=re.M)
    assert [int(n) for n, _ in rows] == list(range(1, 20))
    assert {key for _, key in rows} <= KEYS and len({key for _, key in rows}) == 19


def test_every_citation_of_the_book_is_in_the_bibliography():
    cited = set()
    for page in (ROOT / "book").glob("*.md"):
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text()):
            cited |= {k.strip() for k in group.split(",")}
    assert cited and not cited - KEYS, sorted(cited - KEYS)
