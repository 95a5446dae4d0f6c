"""bAbI-format stories for chapter 7 (memory networks): a generator, a typed reader and a checker.

bAbI (Weston et al. 2015, "Towards AI-complete question answering") is made by a simulator and no
package registry ships it (``CONTRIBUTING.md``, "Data"), so the book generates its own stories in
the official text format::

    1 Mary moved to the bathroom.
    2 John went to the hallway.
    3 Where is Mary? \tbathroom\t1

Lines are numbered from 1 within a story (a new story starts when the number goes back to 1); a
question line is ``question <TAB> answer <TAB> supporting fact ids``. :func:`parse_babi` reads this
format, from :func:`generate` or from an official file (:func:`load_babi`, e.g.
``qa2_two-supporting-facts_train.txt``; official answers such as ``"n,s"`` stay one string).

Tasks generated (``TASKS``): **1** single supporting fact ("Where is Mary?", support: her last
move), **2** two supporting facts ("Where is the football?", support: the pick-up or drop of the
object and the last move of its carrier before it), **3** three supporting facts ("Where was the
apple before the kitchen?", asked while someone carries the apple and has just brought it to the
kitchen for the first time; support: the pick-up, the carrier's last two moves), **6** yes/no
("Is Mary in the office?", support: her last move; yes and no equally likely).

How this differs from Facebook's generator: a smaller fixed vocabulary (:data:`PEOPLE`,
:data:`LOCATIONS`, :data:`OBJECTS` and the verb variants below), nobody moves to where they
already are; every story has 2-3 statements between questions (more while nothing can be asked
yet), at most ``questions_per_story`` questions (5) and ``max_lines`` lines (20), so task 2 and 3
stories are much shorter than Facebook's, which grow far longer; the distractors are simply the
statements about the other people and objects (no "irrelevant fact" sentences); only tasks 1, 2, 3
and 6 of the twenty are covered, with our own rule for task 3's supporting facts (above).

Tokens (:func:`tokenize`): lowercased words, punctuation dropped (``"Where is Mary?"`` ->
``("where", "is", "mary")``), as in the memory-network papers' preprocessing.

:func:`verify` replays every story with a world simulator of its own, written apart from the
generator's (the generator keeps a running state; the checker re-reads the parsed sentences and
searches back through them), and raises a ``ValueError`` naming the line of any answer or
supporting set that the story does not determine exactly. Malformed files raise a ``ValueError``
naming the file and the line.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass, field

__all__ = [
    "TASKS",
    "PEOPLE",
    "LOCATIONS",
    "OBJECTS",
    "Statement",
    "Question",
    "Story",
    "QA",
    "tokenize",
    "generate",
    "parse_babi",
    "format_babi",
    "load_babi",
    "check_story",
    "verify",
    "babi_tasks",
]

TASKS = (1, 2, 3, 6)  # the bAbI tasks :func:`generate` makes
PEOPLE = ("Mary", "John", "Daniel", "Sandra")
LOCATIONS = ("bathroom", "hallway", "garden", "office", "kitchen", "bedroom")
OBJECTS = ("football", "apple", "milk")
MOVES = ("moved to", "went to", "journeyed to", "travelled to", "went back to")
GETS = ("got", "grabbed", "picked up")  # "<P> got the <O> there."
DROPS = ("dropped", "discarded", "put down", "left")  # "<P> dropped the <O>."

WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> tuple[str, ...]:
    """Lowercased words; punctuation (``. ? ,``) is dropped."""
    return tuple(WORD.findall(text.lower()))


# ---------------------------------------------------------------- records


@dataclass(frozen=True)
class Statement:
    id: int  # the number the line starts with, 1 = the story's first line
    text: str  # the sentence as written, e.g. "Mary moved to the bathroom."
    line: int = field(default=0, compare=False)  # line number in the file (1-based)

    @property
    def tokens(self) -> tuple[str, ...]:
        return tokenize(self.text)


@dataclass(frozen=True)
class Question:
    id: int  # the line's number within the story
    text: str  # the question as written, trailing space kept ("Where is Mary? ")
    answer: str  # as written; official multi-word answers stay comma-separated ("n,s")
    support: tuple[int, ...]  # ids of the supporting statements, in the file's order
    line: int = field(default=0, compare=False)  # line number in the file (1-based)

    @property
    def tokens(self) -> tuple[str, ...]:
        return tokenize(self.text)


@dataclass(frozen=True)
class QA:
    """One question with the story before it, ready for a memory network."""

    story: tuple[tuple[str, ...], ...]  # tokens of every statement before the question, in order
    question: tuple[str, ...]  # the question's tokens
    answer: str  # the answer string
    supports: tuple[int, ...]  # indices into ``story`` of the supporting facts
    line: int = field(default=0, compare=False)  # the question's line in the file


@dataclass(frozen=True)
class Story:
    entries: tuple  # Statement and Question records, in order
    name: str = field(default="<text>", compare=False)  # the file it came from, for messages

    @property
    def qas(self) -> list[QA]:
        """One :class:`QA` per question: the statements so far and the supports as indices."""
        sentences, index, out = [], {}, []
        for e in self.entries:
            if isinstance(e, Statement):
                index[e.id] = len(sentences)
                sentences.append(e.tokens)
            else:
                out.append(QA(tuple(sentences), e.tokens, e.answer, tuple(index[i] for i in e.support), e.line))
        return out


# ---------------------------------------------------------------- reading and writing


def parse_babi(text: str, name: str = "<text>") -> list[Story]:
    """Stories from bAbI text (generated or official); blank lines are skipped.

    Raises ``ValueError`` naming ``name`` and the line for a line without a number, numbering that
    neither restarts at 1 nor goes up by one, a question line without its two tabs (a line with a
    ``?`` and no tab), a support id that is not a number or not an earlier statement of the story.
    """
    stories, entries, statements = [], [], set()
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{name}, line {line}"
        number, space, rest = raw.partition(" ")
        if not number.isdigit() or not space:
            raise ValueError(f"{where}: expected '<number> <sentence>', got {raw[:80]!r}")
        n = int(number)
        if n == 1:
            if entries:
                stories.append(Story(tuple(entries), name))
            entries, statements = [], set()
        elif not entries or n != entries[-1].id + 1:
            last = entries[-1].id if entries else None
            raise ValueError(f"{where}: line number {n} follows {last} (numbers go up by one and restart at 1)")
        if "\t" not in rest:
            if "?" in rest:  # bAbI statements never ask
                raise ValueError(
                    f"{where}: question {rest.strip()!r} has no tabs; expected 'question<TAB>answer<TAB>supporting ids'"
                )
            entries.append(Statement(n, rest, line))
            statements.add(n)
            continue
        fields = rest.split("\t")
        if len(fields) != 3 or not fields[0].strip() or not fields[1].strip():
            raise ValueError(
                f"{where}: expected 'question<TAB>answer<TAB>supporting ids', "
                f"got {len(fields)} tab-separated fields in {raw[:80]!r}"
            )
        ids = fields[2].split()
        if not ids or not all(i.isdigit() for i in ids):
            raise ValueError(f"{where}: supporting ids {fields[2]!r} are not numbers")
        bad = [int(i) for i in ids if int(i) not in statements]
        if bad:
            raise ValueError(f"{where}: supporting ids {bad} are not earlier statements of the story")
        entries.append(Question(n, fields[0], fields[1], tuple(int(i) for i in ids), line))
    if entries:
        stories.append(Story(tuple(entries), name))
    return stories


def format_babi(stories: list[Story]) -> str:
    """The bAbI text of ``stories``: ``format_babi(parse_babi(text)) == text`` for generated text."""
    lines = []
    for story in stories:
        for e in story.entries:
            if isinstance(e, Statement):
                lines.append(f"{e.id} {e.text}")
            else:
                lines.append(f"{e.id} {e.text}\t{e.answer}\t{' '.join(map(str, e.support))}")
    return "".join(x + "\n" for x in lines)


def load_babi(path: str | os.PathLike) -> list[Story]:
    """An official bAbI file a reader has, e.g. ``tasks_1-20_v1-2/en/qa2_two-supporting-facts_train.txt``."""
    with open(path, encoding="utf-8") as f:
        return parse_babi(f.read(), os.path.basename(os.fspath(path)))


# ---------------------------------------------------------------- the generator (a running state)


class _World:
    """What the generator knows after each statement, updated as it writes them."""

    def __init__(self):
        self.moves = {p: [] for p in PEOPLE}  # person -> [(location, fact id)] in order
        self.holder = {o: None for o in OBJECTS}  # object -> (person, pick-up id) or None
        self.dropped = {o: None for o in OBJECTS}  # object -> (location, drop id, move id) or None
        self.history = {o: [] for o in OBJECTS}  # object -> locations it has been in, in order

    def where(self, person):
        return self.moves[person][-1] if self.moves[person] else None


def _statement(task: int, rng: random.Random, w: _World, fid: int) -> str:
    held = [(o, w.holder[o][0]) for o in OBJECTS if w.holder[o]]
    gettable = [
        (p, o)
        for p in PEOPLE
        if w.moves[p]
        for o in OBJECTS
        if w.holder[o] is None and (w.dropped[o] is None or w.dropped[o][0] == w.where(p)[0])
    ]
    kind = "move"
    if task in (2, 3):
        weights = {
            "move": 5 if task == 2 else 6,
            "get": 3 if gettable else 0,
            "drop": (2 if task == 2 else 1) if held else 0,
        }
        kind = rng.choices(list(weights), list(weights.values()))[0]
    if kind == "get":
        p, o = rng.choice(gettable)
        place = w.where(p)[0]
        w.holder[o], w.dropped[o] = (p, fid), None
        if not w.history[o] or w.history[o][-1] != place:
            w.history[o].append(place)
        return f"{p} {rng.choice(GETS)} the {o} there."
    if kind == "drop":
        o, p = rng.choice(held)
        w.holder[o], w.dropped[o] = None, (w.where(p)[0], fid, w.where(p)[1])
        return f"{p} {rng.choice(DROPS)} the {o}."
    carriers = [p for _, p in held]
    p = rng.choice(carriers) if task == 3 and carriers and rng.random() < 0.7 else rng.choice(PEOPLE)
    here = w.where(p)
    place = rng.choice([x for x in LOCATIONS if not here or x != here[0]])
    w.moves[p].append((place, fid))
    for o in OBJECTS:
        if w.holder[o] and w.holder[o][0] == p:
            w.history[o].append(place)
    return f"{p} {rng.choice(MOVES)} the {place}."


def _question(task: int, rng: random.Random, w: _World):
    """(question, answer, support ids) about the world now, or None when nothing can be asked."""
    known = [p for p in PEOPLE if w.moves[p]]
    if task in (1, 6):
        if not known:
            return None
        p = rng.choice(known)
        place, fid = w.where(p)
        if task == 1:
            return f"Where is {p}?", place, (fid,)
        yes = rng.random() < 0.5
        asked = place if yes else rng.choice([x for x in LOCATIONS if x != place])
        return f"Is {p} in the {asked}?", "yes" if yes else "no", (fid,)
    if task == 2:
        placed = [o for o in OBJECTS if w.holder[o] or w.dropped[o]]
        if not placed:
            return None
        o = rng.choice(placed)
        if w.holder[o]:
            p, gid = w.holder[o]
            place, mid = w.where(p)
            return f"Where is the {o}?", place, (gid, mid)
        place, did, mid = w.dropped[o]
        return f"Where is the {o}?", place, (did, mid)
    candidates = []
    for o in OBJECTS:
        if not w.holder[o]:
            continue
        p, gid = w.holder[o]
        moves, hist = w.moves[p], w.history[o]
        if len(moves) >= 2 and moves[-1][1] > gid and hist[-1] not in hist[:-1]:
            candidates.append((o, moves[-2], moves[-1], gid))
    if not candidates:
        return None
    o, (before, m1), (place, m2), gid = rng.choice(candidates)
    return f"Where was the {o} before the {place}?", before, (gid, m1, m2)


def _stories(task: int, rng: random.Random, questions_per_story: int, max_lines: int):
    """Endless stories, each a list of lines ``(id, text, answer or None, support)``."""
    while True:
        w, lines, asked, pending = _World(), [], 0, rng.randint(2, 3)
        while True:
            fid = len(lines) + 1
            if pending:
                lines.append((fid, _statement(task, rng, w, fid), None, ()))
                pending -= 1
                continue
            q = _question(task, rng, w)
            for _ in range(3):  # prefer a question the story has not asked yet
                if q is None or q[0] not in {x[1] for x in lines}:
                    break
                q = _question(task, rng, w)
            if q is None and len(lines) + 2 > max_lines:  # no room left to ask: end or start over
                if not asked:
                    w, lines, pending = _World(), [], rng.randint(2, 3)
                    continue
                while lines[-1][2] is None:  # a story ends with a question
                    lines.pop()
                break
            if q is None:
                pending = 1
                continue
            lines.append((fid, q[0], q[1], q[2]))
            asked += 1
            pending = rng.randint(2, 3)
            if asked >= questions_per_story or len(lines) + pending + 1 > max_lines:
                break
        yield lines


def generate(
    task: int,
    n_stories: int,
    seed: int,
    *,
    questions_per_story: int = 5,
    max_lines: int = 20,
    n_questions: int | None = None,
) -> str:
    """bAbI text of ``n_stories`` stories of ``task`` (1, 2, 3 or 6), deterministic in ``seed``.

    With ``n_questions``, stories are made until there are that many questions (``n_stories`` is
    then ignored) and the last story ends at the last question.
    """
    if task not in TASKS:
        raise ValueError(f"task {task!r} is not generated; choose one of {TASKS}")
    if questions_per_story < 1 or max_lines < 4:
        raise ValueError(f"need questions_per_story >= 1 and max_lines >= 4; got {questions_per_story} and {max_lines}")
    rng, out, count = random.Random(seed), [], 0
    for i, story in enumerate(_stories(task, rng, questions_per_story, max_lines)):
        if n_questions is None and i >= n_stories or n_questions is not None and count >= n_questions:
            break
        for fid, text, answer, support in story:
            if answer is None:
                out.append(f"{fid} {text}")
                continue
            out.append(f"{fid} {text} \t{answer}\t{' '.join(map(str, support))}")
            count += 1
            if n_questions is not None and count >= n_questions:
                break  # the last story ends at its last question
    return "".join(x + "\n" for x in out)


# ---------------------------------------------------------------- the checker (replays the text)

_MOVE = re.compile(rf"^(\w+) (?:{'|'.join(MOVES)}) the (\w+)\.$")
_GET = re.compile(rf"^(\w+) (?:{'|'.join(GETS)}) the (\w+) there\.$")
_DROP = re.compile(rf"^(\w+) (?:{'|'.join(DROPS)}) the (\w+)\.$")
_ASK = {  # question pattern -> its task
    re.compile(r"^Where is (\w+)\?$"): 1,
    re.compile(r"^Where is the (\w+)\?$"): 2,
    re.compile(r"^Where was the (\w+) before the (\w+)\?$"): 3,
    re.compile(r"^Is (\w+) in the (\w+)\?$"): 6,
}


def _last(events, test):
    """The last event (id, kind, who, what) satisfying ``test``, or None."""
    return next((e for e in reversed(events) if test(e)), None)


def _place(events, person):
    """The last move of ``person`` among ``events`` (id, "move", person, location), or None."""
    return _last(events, lambda e: e[1] == "move" and e[2] == person)


def _replay(events, obj):
    """The locations ``obj`` has been in, recomputed from the start of the story."""
    hist, carrier = [], None
    for i, (_fid, kind, who, what) in enumerate(events):
        if kind in ("get", "drop") and what == obj:
            carrier = who if kind == "get" else None
            if kind == "get":
                place = _place(events[:i], who)[3]
                hist += [] if hist and hist[-1] == place else [place]
        elif kind == "move" and who == carrier and hist[-1] != what:
            hist.append(what)
    return hist


def _expect(events, task, args, where):
    """(answer, support ids) the story so far determines for a question of ``task``."""
    if task in (1, 6):
        move = _place(events, args[0])
        if move is None:
            raise ValueError(f"{where}: {args[0]} has not moved yet; the question has no answer")
        return ((move[3] if task == 1 else "yes" if move[3] == args[1] else "no"), {move[0]})
    fact = _last(events, lambda e: e[1] in ("get", "drop") and e[3] == args[0])
    if fact is None:
        raise ValueError(f"{where}: nobody has had the {args[0]} yet; the question has no answer")
    if task == 2:
        move = _place(events[: events.index(fact)] if fact[1] == "drop" else events, fact[2])
        return move[3], {fact[0], move[0]}
    moves = [e for e in events if e[1] == "move" and e[2] == fact[2]]
    hist = _replay(events, args[0])
    if fact[1] != "get" or len(moves) < 2 or moves[-1][0] < fact[0] or hist[-1] != args[1] or hist.count(args[1]) != 1:
        raise ValueError(
            f"{where}: the {args[0]} is not being carried into the {args[1]} for the "
            f"first time (it has been in {hist}); 'before' is not determined"
        )
    return hist[-2], {fact[0], moves[-2][0], moves[-1][0]}


def check_story(story: Story, task: int | None = None) -> None:
    """Replay ``story``; raise ``ValueError`` naming the line of any wrong answer or support set.

    Also refuses sentences it cannot read, impossible events (a pick-up of an object someone else
    holds or that lies elsewhere, a drop of an object the person does not hold) and, with ``task``,
    questions of another task.
    """
    events = []  # (id, kind, person, location or object), one per statement
    for e in story.entries:
        where = f"{story.name}, line {e.line}"
        if isinstance(e, Statement):
            for kind, pattern in (("move", _MOVE), ("get", _GET), ("drop", _DROP)):  # noqa: B007 (kind: read below)
                m = pattern.match(e.text.strip())
                if m:
                    break
            else:
                raise ValueError(f"{where}: cannot read the statement {e.text!r}")
            who, what = m.groups()
            fact = _last(events, lambda x: x[1] in ("get", "drop") and x[3] == what)  # noqa: B023 (called here)
            if kind == "get":
                here = _place(events, who)
                if here is None:
                    raise ValueError(f"{where}: {who} picks up the {what} before being anywhere")
                if fact and (fact[1] == "get" or _place(events[: events.index(fact)], fact[2])[3] != here[3]):
                    raise ValueError(f"{where}: the {what} is held by {fact[2]} or lies elsewhere")
            if kind == "drop" and (fact is None or fact[1] != "get" or fact[2] != who):
                raise ValueError(f"{where}: {who} drops the {what} without holding it")
            events.append((e.id, kind, who, what))
            continue
        found = [(t, m.groups()) for p, t in _ASK.items() for m in [p.match(e.text.strip())] if m]
        if not found:
            raise ValueError(f"{where}: cannot read the question {e.text!r}")
        kind, args = found[0]
        if task is not None and kind != task:
            raise ValueError(f"{where}: {e.text.strip()!r} is a task {kind} question, not task {task}")
        answer, support = _expect(events, kind, args, where)
        if e.answer != answer:
            raise ValueError(f"{where}: {e.text.strip()!r} answered {e.answer!r}; the story says {answer!r}")
        if set(e.support) != support or len(e.support) != len(support):
            raise ValueError(
                f"{where}: {e.text.strip()!r} is supported by {list(e.support)}; the facts needed are {sorted(support)}"
            )


def verify(text: str, task: int | None = None, name: str = "<generated>") -> None:
    """Parse ``text`` and :func:`check_story` every story (``ValueError`` on the first mistake)."""
    for story in parse_babi(text, name):
        check_story(story, task)


def babi_tasks(
    tasks=TASKS, n_train: int = 1000, n_test: int = 1000, seed: int = 0, **options
) -> dict[int, dict[str, list[QA]]]:
    """``{task: {"train": [QA], "test": [QA]}}``, 1,000 questions each by default (bAbI "1k").

    Train and test come from different seeds derived from ``seed`` and the task, so they are
    deterministic and drawn independently (short stories can repeat between them). ``options``
    go to :func:`generate`.
    """
    out = {}
    for task in tasks:
        out[task] = {}
        for k, (split, n) in enumerate((("train", n_train), ("test", n_test))):
            text = generate(task, 0, seed * 100 + task * 10 + k, n_questions=n, **options)
            out[task][split] = [qa for s in parse_babi(text, f"task {task} {split}") for qa in s.qas]
    return out
