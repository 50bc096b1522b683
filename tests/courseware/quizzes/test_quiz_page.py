"""The quiz page as a student uses it without JavaScript: one part (chapter section) at a time,
a navigator of every question's state, and what the page says about an answer shown inside
the block of the question answered, in the student's language."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import translation

from courseware.courses.models import Item, ItemKind
from courseware.quizzes.models import Attempt, Question, Quiz
from courseware.quizzes.spec import render
from courseware.quizzes.templatetags.quiz_text import quiz_markdown
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import SLUG, answer, bank, logged_in, right_answer, variant
from tests.courseware.quizzes.conftest import question as bank_question
from tests.courseware.quizzes.page_html import Element, parse, question_block

PAGE = f"/quizzes/{SLUG}/"
CORES = "04-a100-cores-per-sm"  # question 4, part 3 (§15.3): numeric, 64, same for everyone
WARP = "07-warp-size"  # question 7, part 3: single choice, "w32" is right
SIMT = "09-simt-statements"  # question 9, part 3: multiple choice
LAYERNORM = "18-layernorm-memory-time"  # question 18, part 5 (§15.5): numbers drawn per try


def post(client: Client, key: str, value: Any = None, **headers: Any) -> Any:
    data: dict[str, Any] = {"question": key}
    if value is not None:
        data["answer"] = value
    return client.post(PAGE, data, **headers)


def feedback_of(block: Element) -> Element:
    """The one feedback of a question block: a `div.feedback` with role=status."""
    feedback = block.one("div", "feedback")
    assert feedback.attrs.get("role") == "status"
    return feedback


def blocks_with_feedback(html: str | bytes) -> list[str]:
    return [s.attrs["id"] for s in parse(html).all("section", "question") if s.all(cls="feedback")]


# --------------------------------------------------------------------------- feedback


def test_a_right_answer_lands_on_its_question_with_the_feedback_inside_it(cast: Cast) -> None:
    client = logged_in(cast.alice)
    response = post(client, CORES, "64")
    assert response.status_code == 302
    assert response["Location"] == f"{PAGE}?part=3#q-4"
    html = client.get(response["Location"]).content
    feedback = feedback_of(question_block(html, 4))
    assert "right" in feedback.classes and "Right!" in feedback.text
    assert "earns 1 of 1 points" in feedback.text
    assert blocks_with_feedback(html) == ["q-4"]
    assert b'class="messages"' not in html  # nothing about the answer at the top of the page
    # The feedback is said once: a reload shows the question with its history only.
    again = client.get(response["Location"]).content
    assert blocks_with_feedback(again) == []
    assert "right" in question_block(again, 4).one("table", "history").text


def test_right_then_wrong_each_shows_beside_the_question_answered(cast: Cast) -> None:
    client = logged_in(cast.alice)
    html = client.get(post(client, WARP, "w32")["Location"]).content
    assert blocks_with_feedback(html) == ["q-7"]
    response = post(client, CORES, "128")
    assert response["Location"].endswith("#q-4")
    html = client.get(response["Location"]).content
    assert blocks_with_feedback(html) == ["q-4"]
    feedback = feedback_of(question_block(html, 4))
    assert "wrong" in feedback.classes
    assert "Not right." in feedback.text and "128" in feedback.text
    assert "You have 2 attempts left." in feedback.text
    # The wrong answer's form is there to try again, next to its feedback.
    assert question_block(html, 4).all("form", "answer")
    assert not question_block(html, 7).all("form")  # answered right: nothing more to send


def test_the_last_wrong_attempt_says_the_explanation_is_below(cast: Cast) -> None:
    client = logged_in(cast.alice)
    for wrong in ("compute", "neither"):
        answer(cast.alice, "14-ai-two-on-a100", wrong)
    html = client.get(post(client, "14-ai-two-on-a100", "batch")["Location"]).content
    block = question_block(html, 14)
    assert "That was your last attempt" in feedback_of(block).text
    assert block.all("div", "explanation") and not block.all("form")


# --------------------------------------------------------------------------- history


def test_the_history_shows_the_options_chosen_as_text_never_their_ids(cast: Cast) -> None:
    client = logged_in(cast.alice)
    response = post(client, SIMT, ["serial-branches", "registers-shared"])
    html = client.get(response["Location"]).content
    block = question_block(html, 9)
    history = block.one("table", "history").text
    assert "the branches run one after the other" in history
    assert "Registers are shared by all threads of the GPU" in history
    assert "serial-branches" not in block.text and "registers-shared" not in block.text
    assert "the branches run one after the other" in feedback_of(block).text
    with translation.override("zh-hans"):
        zh = client.get(f"{PAGE}?part=3", HTTP_ACCEPT_LANGUAGE="zh-hans").content
    history = question_block(zh, 9).one("table", "history").text
    assert "这些分支会依次执行" in history and "serial-branches" not in history


def test_the_history_letters_the_options_as_the_student_saw_them(cast: Cast) -> None:
    client = logged_in(cast.alice)
    answer(cast.alice, WARP, "w64")
    block = question_block(client.get(f"{PAGE}?part=3").content, 7)
    form_letters = {
        label.text.split(".")[0]: label.text.split(". ", 1)[1] for label in block.all("label")
    }
    letter, text = block.one("table", "history").one("span", "chosen").text.split(". ", 1)
    assert form_letters[letter] == text


# --------------------------------------------------------------------------- new numbers


def redrawn_question(user: User) -> tuple[int, str]:
    """A numeric question whose second try asks this student other numbers than the first."""
    for position, asked in enumerate(bank().questions, start=1):
        if asked.kind == "numeric" and variant(user, asked.key, 1) != variant(user, asked.key, 2):
            return position, asked.key
    raise AssertionError("no question draws new numbers for a second try")


def test_a_wrong_answer_that_draws_new_numbers_says_so_beside_the_question(cast: Cast) -> None:
    client = logged_in(cast.alice)
    number, key = redrawn_question(cast.alice)
    part = client.get(f"{PAGE}q/{number}/")["Location"]
    assert not question_block(client.get(part).content, number).all(cls="new-numbers")
    html = client.get(post(client, key, "123456789")["Location"]).content
    block = question_block(html, number)
    notice = block.one(cls="new-numbers")
    assert "New numbers were drawn for your next try" in notice.text

    # The text now asks with the second try's numbers; the history marks the first try.
    def shown(attempt: int) -> str:
        text = render(bank_question(key).text["en"], variant(cast.alice, key, attempt))
        return parse(str(quiz_markdown(text))).text

    assert block.one("div", "text").text == shown(2) != shown(1)
    assert "asked with other numbers" in block.one("table", "history").text
    api = cast.token_client(cast.alice).get(f"/api/v1/quizzes/{SLUG}/questions/{key}").json()
    assert api["new_numbers"] is True and api["status"] == "wrong"
    with translation.override("zh-hans"):
        zh = client.get(part, HTTP_ACCEPT_LANGUAGE="zh-hans").content
    assert (
        "已为你的下一次作答重新抽取了数值" in question_block(zh, number).one(cls="new-numbers").text
    )


def test_no_new_numbers_notice_for_a_question_whose_numbers_never_change(cast: Cast) -> None:
    client = logged_in(cast.alice)
    html = client.get(post(client, CORES, "128")["Location"]).content
    assert not parse(html).all(cls="new-numbers")


def test_the_notice_goes_once_the_question_is_answered_right(cast: Cast) -> None:
    client = logged_in(cast.alice)
    number, key = redrawn_question(cast.alice)
    answer(cast.alice, key, "123456789")
    html = client.get(
        post(client, key, right_answer(cast.alice, key, attempt=2))["Location"]
    ).content
    block = question_block(html, number)
    assert "Right!" in feedback_of(block).text and not block.all(cls="new-numbers")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("key", "number", "value", "says"),
    [
        (CORES, 4, "", "The answer is empty"),
        (CORES, 4, "sixty-four", "is not a number we can read"),
        (CORES, 4, "6,4", "decimal point"),
        (LAYERNORM, 18, "5 GB", "a size (B, KB, MB, GB, TB)"),
        (WARP, 7, "w33", "is not a choice of this question"),
        (WARP, 7, None, "Choose one of the answers"),
        (SIMT, 9, None, "Choose at least one answer"),
    ],
)
def test_bad_input_is_explained_beside_the_question_and_costs_no_attempt(
    cast: Cast, key: str, number: int, value: Any, says: str
) -> None:
    response = post(logged_in(cast.alice), key, value)
    assert response.status_code == 200  # the page again, with what was typed
    block = question_block(response.content, number)
    feedback = feedback_of(block)
    assert "error" in feedback.classes and says in feedback.text
    assert "No attempt was used." in feedback.text
    assert blocks_with_feedback(response.content) == [f"q-{number}"]
    if bank_question(key).kind == "numeric":  # what was typed is kept, to correct it
        typed = [i for i in block.all("input") if i.attrs.get("name") == "answer"]
        assert typed[0].attrs.get("value") == value
    assert Attempt.objects.count() == 0


def test_an_answer_after_the_last_attempt_is_refused_beside_the_question(cast: Cast) -> None:
    for wrong in ("1", "2", "3"):
        answer(cast.alice, CORES, wrong)
    response = post(logged_in(cast.alice), CORES, "64")
    feedback = feedback_of(question_block(response.content, 4))
    assert "You have used all 3 attempts" in feedback.text
    assert Attempt.objects.filter(question__key=CORES).count() == 3


def other_quiz() -> Item:
    item = Item.objects.create(
        course=Item.objects.get(slug=SLUG).course,
        kind=ItemKind.QUIZ,
        slug="ch16-other-quiz",
        chapter="ch16",
        title_en="Quiz: another chapter",
        title_zh="小测验：另一章",
        source_path="ch16/quiz",
        content_hash="0" * 64,
        max_score=Decimal(1),
        is_published=True,
    )
    quiz = Quiz.objects.create(item=item, reveal="after_attempts", attempt_scores=[1.0])
    Question.objects.create(
        quiz=quiz, key="01-other", position=1, kind="numeric", points=1, text_en="?"
    )
    return item


def test_answering_another_quizs_question_here_says_where_it_belongs(cast: Cast) -> None:
    other_quiz()
    response = post(logged_in(cast.alice), "01-other", "1")
    assert response.status_code == 200
    refused = parse(response.content).by_id("answer-refused")
    assert refused is not None and refused.attrs.get("role") == "status"
    assert "belongs to another quiz, “Quiz: another chapter”" in refused.text
    assert refused.one("a").attrs["href"] == "/quizzes/ch16-other-quiz/"
    assert "No attempt was used." in refused.text
    response = post(logged_in(cast.alice), "99-no-such-question", "1")
    refused = parse(response.content).by_id("answer-refused")
    assert refused is not None and "has no question '99-no-such-question'" in refused.text
    assert Attempt.objects.count() == 0


# --------------------------------------------------------------------------- navigation


def navigator_states(html: str | bytes) -> dict[str, str]:
    nav = parse(html).by_id("quiz-navigator")
    assert nav is not None
    return {
        a.attrs["data-key"]: next(c for c in a.classes if c.startswith("state-"))
        for a in nav.all("a", "nav-q")
        if "data-key" in a.attrs
    }


def test_the_navigator_shows_every_questions_state(cast: Cast) -> None:
    answer(cast.alice, CORES, "64")
    answer(cast.alice, WARP, "w64")
    for wrong in ("compute", "neither", "batch"):
        answer(cast.alice, "14-ai-two-on-a100", wrong)
    html = logged_in(cast.alice).get(f"{PAGE}?part=1").content
    states = navigator_states(html)
    assert len(states) == len(bank().questions)
    assert states[CORES] == "state-right"
    assert states[WARP] == "state-wrong"
    assert states["14-ai-two-on-a100"] == "state-exhausted"
    assert states[SIMT] == "state-unanswered"
    link = next(a for a in parse(html).all("a", "nav-q") if a.attrs.get("data-key") == WARP)
    assert link.attrs["href"] == f"{PAGE}?part=3#q-7" and "not right, try again" in link.text


def test_a_part_shows_its_section_with_links_to_the_parts_around_it(cast: Cast) -> None:
    html = logged_in(cast.alice).get(f"{PAGE}?part=3").content
    shown = [s.attrs["id"] for s in parse(html).all("section", "question")]
    # §15.3 is questions 4 to 9, and 38 (occupancy), asked in file order
    assert shown == [f"q-{n}" for n in (*range(4, 10), 38)]
    pager = parse(html).one("nav", "pager")
    hrefs = {a.attrs["rel"]: a.attrs["href"] for a in pager.all("a")}
    assert hrefs == {"prev": f"{PAGE}?part=2", "next": f"{PAGE}?part=4"}
    first = logged_in(cast.alice).get(f"{PAGE}?part=1").content
    assert [a.attrs["rel"] for a in parse(first).one("nav", "pager").all("a")] == ["next"]
    every = logged_in(cast.alice).get(f"{PAGE}?part=all").content
    assert len(parse(every).all("section", "question")) == len(bank().questions)


def test_the_page_opens_where_the_student_left_off(cast: Cast) -> None:
    client = logged_in(cast.alice)
    assert question_block(client.get(PAGE).content, 1)
    for key in ("01-training-years", "35-cluster-size", "36-tokens-per-second"):
        answer(cast.alice, key, right_answer(cast.alice, key))
    html = client.get(PAGE).content  # §15.1 is done: §15.2 comes next
    shown = [s.attrs["id"] for s in parse(html).all("section", "question")]
    assert shown == ["q-2", "q-3", "q-37"]
    assert client.get(f"{PAGE}?part=zzz").status_code == 200  # a bad part: picked for them


def test_each_question_has_its_own_address(cast: Cast) -> None:
    client = logged_in(cast.alice)
    assert client.get(f"{PAGE}q/18/")["Location"] == f"{PAGE}?part=5#q-18"
    assert client.get(f"{PAGE}q/99/").status_code == 404


# --------------------------------------------------------------------------- 简体中文


def test_the_page_speaks_chinese_around_the_chinese_question_text(cast: Cast) -> None:
    client = logged_in(cast.alice)
    with translation.override("zh-hans"):
        response = post(client, CORES, "128", HTTP_ACCEPT_LANGUAGE="zh-hans")
        html = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="zh-hans").content
        bad = post(client, CORES, "abc", HTTP_ACCEPT_LANGUAGE="zh-hans").content
        unit = post(client, LAYERNORM, "5 GB", HTTP_ACCEPT_LANGUAGE="zh-hans").content
    block = question_block(html, 4)
    assert "第 4 题" in block.text and "每个 SM 有多少个 FP32 Core" in block.text
    assert "回答不正确。" in feedback_of(block).text and "你还有 2 次机会。" in block.text
    assert "提交" in block.text and "你的作答记录" in block.text
    nav = parse(html).by_id("quiz-navigator")
    assert nav is not None and "题目" in nav.text and "答错了，可以再试" in nav.text
    for english_chrome in ("Question 4", "Not right", "Your answers", "Check", "attempts left"):
        assert english_chrome not in parse(html).text, english_chrome
    assert "这次作答未被接受。" in feedback_of(question_block(bad, 4)).text
    unit_message = feedback_of(question_block(unit, 18)).text
    assert "时间（" in unit_message and "数据量（" in unit_message
    form = question_block(unit, 18)
    assert "你的答案（单位：微秒）" in form.text  # the unit named in Chinese too
