"""attention/data/babi.py: generated bAbI stories, the reader, the writer and the replaying checker."""

import pytest

from attention.data import babi
from attention.data.babi import (
    LOCATIONS,
    QA,
    TASKS,
    Question,
    Statement,
    babi_tasks,
    check_story,
    format_babi,
    generate,
    load_babi,
    parse_babi,
    verify,
)

# Hand-written in the official format, modelled on the opening stories of bAbI's qa1 and qa2 files
# (same sentences, same tab layout with the space before the first tab); qa1 holds two stories, so
# the numbering restarts at 1.
OFFICIAL_QA1 = """\
1 Mary moved to the bathroom.
2 John went to the hallway.
3 Where is Mary? \tbathroom\t1
4 Daniel went back to the hallway.
5 Sandra moved to the garden.
6 Where is Daniel? \thallway\t4
1 Sandra travelled to the office.
2 Sandra went to the bathroom.
3 Where is Sandra? \tbathroom\t2
"""
OFFICIAL_QA2 = """\
1 Mary moved to the bathroom.
2 Sandra journeyed to the bedroom.
3 Mary got the football there.
4 John went to the kitchen.
5 Mary went back to the kitchen.
6 Mary went back to the garden.
7 Where is the football? \tgarden\t3 6
8 Sandra went back to the office.
9 John moved to the office.
10 Sandra journeyed to the hallway.
11 Daniel went back to the kitchen.
12 Mary dropped the football.
13 John got the milk there.
14 Where is the football? \tgarden\t12 6
"""
# Task 19 (path finding) answers are comma-separated directions: kept as one string.
OFFICIAL_QA19 = """\
1 The office is east of the hallway.
2 The kitchen is north of the office.
3 How do you go from the hallway to the kitchen?\te,n\t1 2
"""


def questions(text):
    return [qa for story in parse_babi(text) for qa in story.qas]


def question_lines(text):
    """(line number, line) of every question line."""
    return [(i, line) for i, line in enumerate(text.splitlines(), start=1) if "\t" in line]


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_checker_accepts_every_generated_story(task, seed):
    text = generate(task, 0, seed, n_questions=200)
    verify(text, task)
    assert len(questions(text)) == 200
    assert text.endswith("\n") and "\t" in text.splitlines()[-1]  # the last story ends at a question


@pytest.mark.parametrize("task", TASKS)
def test_checker_rejects_a_wrong_answer_with_its_line(task):
    text = generate(task, 0, 3, n_questions=50)
    lines = text.splitlines(keepends=True)
    for number, line in question_lines(text)[::7]:
        head, answer, support = line.split("\t")
        wrong = {"yes": "no", "no": "yes"}.get(answer) or next(x for x in LOCATIONS if x != answer)
        bad = lines[: number - 1] + [f"{head}\t{wrong}\t{support}\n"] + lines[number:]
        with pytest.raises(ValueError, match=rf"line {number}: .*answered '{wrong}'"):
            verify("".join(bad), task)


@pytest.mark.parametrize("task", TASKS)
def test_checker_rejects_a_wrong_supporting_set_with_its_line(task):
    text = generate(task, 0, 4, n_questions=50)
    lines = text.splitlines(keepends=True)
    tried = 0
    for number, line in question_lines(text)[::5]:
        head, answer, support = line.rstrip("\n").split("\t")
        ids = support.split()
        start = number - int(head.split()[0])  # index of the story's first line (ids count from 1)
        statements = [int(x.split()[0]) for x in lines[start : number - 1] if "\t" not in x]
        other = next((s for s in statements if str(s) not in ids), None)
        mutations = [ids[:-1] + [str(other)]] if other is not None else []  # one fact swapped
        mutations += [ids + [str(other)]] if other is not None else []  # one fact too many
        mutations += [ids[1:]] if len(ids) > 1 else []  # one fact missing
        for new in mutations:
            bad = lines[: number - 1] + [f"{head}\t{answer}\t{' '.join(new)}\n"] + lines[number:]
            with pytest.raises(ValueError, match=rf"line {number}: .*supported by"):
                verify("".join(bad), task)
            tried += 1
    assert tried >= 10


def test_checker_rejects_impossible_events_and_unknown_sentences():
    start = "1 Mary moved to the bathroom.\n2 Mary got the apple there.\n"
    with pytest.raises(ValueError, match="line 3: John picks up the apple before being anywhere"):
        verify(start + "3 John got the apple there.\n4 Where is Mary? \tbathroom\t1\n")
    with pytest.raises(ValueError, match="line 4: the apple is held by Mary"):
        verify(start + "3 John went to the bathroom.\n4 John got the apple there.\n")
    with pytest.raises(ValueError, match="line 3: John drops the apple without holding it"):
        verify(start + "3 John dropped the apple.\n")
    with pytest.raises(ValueError, match="line 2: cannot read the statement"):
        verify("1 Mary moved to the bathroom.\n2 The cat sat on the mat.\n")
    with pytest.raises(ValueError, match="line 2: John has not moved yet"):
        verify("1 Mary moved to the bathroom.\n2 Where is John? \tbathroom\t1\n")


def test_checker_catches_a_generator_bug(monkeypatch):
    """A generator that reads a person's *first* move as where they are is caught by the checker."""
    text = generate(1, 0, 0, n_questions=200)
    monkeypatch.setattr(babi._World, "where", lambda self, p: self.moves[p][0] if self.moves[p] else None)
    buggy = generate(1, 0, 0, n_questions=200)
    assert buggy != text
    with pytest.raises(ValueError, match=r"line \d+: "):
        verify(buggy, 1)


def test_task_3_before_needs_a_first_visit():
    story = (
        "1 John went to the kitchen.\n2 John got the milk there.\n3 John moved to the office.\n"
        "4 Where was the milk before the office? \tkitchen\t2 1 3\n"
    )
    verify(story, 3)
    back = story + "5 John went back to the kitchen.\n6 John moved to the office.\n"
    with pytest.raises(
        ValueError,
        match=r"line 7: the milk is not being carried into the office for the "
        r"first time \(it has been in \['kitchen', 'office', 'kitchen', "
        r"'office'\]\)",
    ):  # the office was seen before: 'before' is ambiguous
        verify(back + "7 Where was the milk before the office? \tkitchen\t2 5 6\n", 3)


def test_checker_rejects_a_question_of_another_task():
    with pytest.raises(ValueError, match="line 3: 'Where is Mary\\?' is a task 1 question, not task 6"):
        verify(OFFICIAL_QA1, 6)


@pytest.mark.parametrize("task", TASKS)
def test_format_parse_round_trip(task):
    text = generate(task, 30, 7)
    stories = parse_babi(text)
    assert len(stories) == 30
    assert format_babi(stories) == text
    assert parse_babi(format_babi(stories)) == stories


def test_official_snippets_parse_round_trip_and_check(tmp_path):
    one = parse_babi(OFFICIAL_QA1, "qa1_single-supporting-fact_test.txt")
    assert [len(s.entries) for s in one] == [6, 3]  # the numbering restarted at 1
    first = one[0].qas + one[1].qas
    assert first[0] == QA(
        (("mary", "moved", "to", "the", "bathroom"), ("john", "went", "to", "the", "hallway")),
        ("where", "is", "mary"),
        "bathroom",
        (0,),
    )
    assert first[1].supports == (2,) and first[1].story[2] == ("daniel", "went", "back", "to", "the", "hallway")
    assert first[2].story == (
        ("sandra", "travelled", "to", "the", "office"),
        ("sandra", "went", "to", "the", "bathroom"),
    )  # the new story only
    assert one[1].entries[2] == Question(3, "Where is Sandra? ", "bathroom", (2,))
    assert one[0].entries[0] == Statement(1, "Mary moved to the bathroom.")

    (path := tmp_path / "qa2_two-supporting-facts_train.txt").write_text(OFFICIAL_QA2, encoding="utf-8")
    two = load_babi(path)
    assert len(two) == 1 and two[0].name == "qa2_two-supporting-facts_train.txt"
    qas = two[0].qas
    assert [q.answer for q in qas] == ["garden", "garden"]
    assert qas[0].supports == (2, 5) and qas[1].supports == (10, 5)  # ids 3 6 and 12 6
    assert qas[1].story[10] == ("mary", "dropped", "the", "football") and len(qas[1].story) == 12
    assert qas[1].question == ("where", "is", "the", "football")

    nineteen = parse_babi(OFFICIAL_QA19)
    assert nineteen[0].qas[0].answer == "e,n" and nineteen[0].qas[0].supports == (0, 1)
    for text in (OFFICIAL_QA1, OFFICIAL_QA2, OFFICIAL_QA19):
        assert format_babi(parse_babi(text)) == text
    # the checker's supporting facts agree with the official ones on these stories
    verify(OFFICIAL_QA1, 1)
    verify(OFFICIAL_QA2, 2)


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("Mary moved to the bathroom.\n", 1, "expected '<number> <sentence>'"),
        ("1 Mary moved to the bathroom.\n3 John went to the hallway.\n", 2, "line number 3 follows 1"),
        ("2 Mary moved to the bathroom.\n", 1, "line number 2 follows None"),
        ("1 Mary moved to the bathroom.\n2 Where is Mary? bathroom 1\n", 2, "has no tabs"),
        ("1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\n", 2, "got 2 tab-separated fields"),
        ("1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\tone\n", 2, "'one' are not numbers"),
        ("1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t\n", 2, "are not numbers"),
        ("1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t3\n", 2, r"\[3\] are not earlier statements"),
        (
            "1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t1\n3 Where is Mary?\tbathroom\t2\n",
            3,
            r"\[2\] are not earlier statements",
        ),  # 2 is a question, not a statement
        (
            "1 Mary moved to the bathroom.\n1 John went to the hallway.\n2 Where is John?\thallway\t1\n"
            "3 Where is Mary?\tbathroom\t1 4\n",
            4,
            r"\[4\] are not earlier",
        ),
    ],
)
def test_malformed_lines_name_the_file_and_line(text, line, message):
    with pytest.raises(ValueError, match=rf"^qa1_test\.txt, line {line}: .*{message}"):
        parse_babi(text, "qa1_test.txt")


@pytest.mark.parametrize("task", TASKS)
def test_same_seed_same_text_other_seed_other_text(task):
    assert generate(task, 20, 5) == generate(task, 20, 5)
    assert generate(task, 20, 5) != generate(task, 20, 6)
    assert generate(task, 0, 5, n_questions=30) == generate(task, 0, 5, n_questions=30)


@pytest.mark.parametrize("task, facts", [(1, 1), (2, 2), (3, 3), (6, 1)])
def test_each_task_needs_its_number_of_supporting_facts(task, facts):
    qas = questions(generate(task, 0, 8, n_questions=300))
    assert {len(q.supports) for q in qas} == {facts}
    assert all(len(set(q.supports)) == facts for q in qas)
    answers = {q.answer for q in qas}
    if task == 6:
        assert answers == {"yes", "no"}
        yes = sum(q.answer == "yes" for q in qas)
        assert 0.3 < yes / len(qas) < 0.7
    else:
        assert answers <= set(LOCATIONS) and len(answers) > 1


def test_stories_stay_short_and_question_every_few_statements():
    for task in TASKS:
        for story in parse_babi(generate(task, 100, 9)):
            assert 3 <= len(story.entries) <= 20
            assert isinstance(story.entries[-1], Question)
            assert 1 <= len(story.qas) <= 5


def test_babi_tasks_1k_default_is_deterministic_and_checked():
    data = babi_tasks()
    assert sorted(data) == [1, 2, 3, 6]
    for task, splits in data.items():
        assert len(splits["train"]) == 1000 and len(splits["test"]) == 1000
        assert splits["train"] != splits["test"]
        for qa in splits["train"][:200]:
            assert all(0 <= i < len(qa.story) for i in qa.supports)
            if task in (1, 2):  # the answer is named by the last supporting fact needed
                assert qa.answer in qa.story[qa.supports[-1]]
    small = babi_tasks((2,), n_train=40, n_test=10, seed=3)
    assert small == babi_tasks((2,), n_train=40, n_test=10, seed=3)
    assert small != babi_tasks((2,), n_train=40, n_test=10, seed=4)
    assert len(small[2]["train"]) == 40 and len(small[2]["test"]) == 10


def test_generate_refuses_unknown_tasks():
    with pytest.raises(ValueError, match=r"task 4 is not generated; choose one of \(1, 2, 3, 6\)"):
        generate(4, 1, 0)


def test_check_story_takes_one_story():
    story = parse_babi(OFFICIAL_QA2)[0]
    check_story(story, 2)
    wrong = parse_babi(OFFICIAL_QA2.replace("\tgarden\t12 6", "\tkitchen\t12 6"), "qa2.txt")[0]
    with pytest.raises(ValueError, match="qa2.txt, line 14: .*answered 'kitchen'; the story says 'garden'"):
        check_story(wrong, 2)
