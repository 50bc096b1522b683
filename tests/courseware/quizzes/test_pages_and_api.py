"""Pages and API: the answer and explanation never show before they should, bad input gets a
clear 4xx, and the explanation is worked with the student's own numbers."""

from __future__ import annotations

import json
from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from courseware.courses.models import Item, ItemPolicy
from courseware.quizzes.models import Attempt, QuizSettings
from courseware.quizzes.spec import render
from courseware.quizzes.templatetags.quiz_text import quiz_markdown
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import SLUG, answer, bank, logged_in, right_answer, variant
from tests.courseware.quizzes.conftest import question as bank_question

PAGE = f"/quizzes/{SLUG}/"
# The page shows one part (section) at a time; what must (not) show anywhere is checked on all.
EVERY_PART = f"{PAGE}?part=all"
API = f"/api/v1/quizzes/{SLUG}"


def explanation_html(user: User, key: str, lang: str = "en", attempt: int = 1) -> str:
    """The start of the explanation as the page would render it for this student."""
    question = bank_question(key)
    variables = variant(user, key, attempt)
    solution = question.solve(variables)
    text = render(
        question.explanation[lang], question.explanation_context(solution, variables, lang)
    )
    return str(quiz_markdown(text))[3:60]


def test_no_answer_or_explanation_before_the_student_is_done(cast: Cast) -> None:
    client = logged_in(cast.alice)
    html = client.get(EVERY_PART).content.decode()
    data = client.get(API).json()
    body = json.dumps(data, ensure_ascii=False)
    assert len(data["questions"]) == len(bank().questions)
    for question in bank().questions:
        chunk = explanation_html(cast.alice, question.key)
        assert chunk not in html, question.key
        assert chunk[:40] not in body
    for q in data["questions"]:
        assert q["answer"] is None and q["explanation"] is None and not q["revealed"]
        assert all(set(c) == {"id", "text"} for c in q["choices"])
    assert "correct" not in body and "expected" not in body


def test_a_wrong_attempt_still_reveals_nothing_and_the_api_says_so(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    response = client.post(
        f"{API}/questions/04-a100-cores-per-sm/attempts",
        data={"answer": "128"},
        content_type="application/json",
    )
    assert response.status_code == 201
    data = response.json()
    assert data["attempt"] == {
        "number": 1,
        "answer": "128",
        "correct": False,
        "score": 0.0,
        "is_late": False,
    }
    assert data["question"]["answer"] is None and data["question"]["explanation"] is None
    assert data["question"]["attempts_left"] == 2
    html = logged_in(cast.alice).get(EVERY_PART).content.decode()
    assert explanation_html(cast.alice, "04-a100-cores-per-sm") not in html


def test_a_right_answer_reveals_the_explanation_with_the_students_numbers(cast: Cast) -> None:
    key = "18-layernorm-memory-time"
    answer(cast.alice, key, right_answer(cast.alice, key))
    html = logged_in(cast.alice).get(EVERY_PART).content.decode()
    assert explanation_html(cast.alice, key) in html
    v = variant(cast.alice, key)
    assert f"{v['b']} × {v['s']} × {v['d']}" in html
    q = (
        Client(HTTP_AUTHORIZATION=cast.token_client(cast.alice).defaults["HTTP_AUTHORIZATION"])
        .get(f"{API}/questions/{key}/")
        .json()
    )
    assert (
        q["revealed"] and q["answer"].endswith(" µs") and f"{v['b']} × {v['s']}" in q["explanation"]
    )
    # Bob has not answered: he sees nothing of it.
    assert (
        explanation_html(cast.bob, key) not in logged_in(cast.bob).get(EVERY_PART).content.decode()
    )


def test_the_last_wrong_attempt_reveals_the_explanation(cast: Cast) -> None:
    for wrong in ("compute", "neither", "batch"):
        answer(cast.alice, "14-ai-two-on-a100", wrong)
    html = logged_in(cast.alice).get(EVERY_PART).content.decode()
    assert explanation_html(cast.alice, "14-ai-two-on-a100") in html


def test_after_deadline_mode_waits_for_the_deadline(cast: Cast) -> None:
    item = Item.objects.get(slug=SLUG)
    QuizSettings.objects.create(offering=cast.offering, quiz=item.quiz, reveal="after_deadline")
    policy = ItemPolicy.objects.create(
        offering=cast.offering, item=item, due_at=timezone.now() + timedelta(days=1)
    )
    answer(cast.alice, "04-a100-cores-per-sm", "64")
    chunk = explanation_html(cast.alice, "04-a100-cores-per-sm")
    client = logged_in(cast.alice)
    assert chunk not in client.get(EVERY_PART).content.decode()
    assert client.get(f"{API}/questions/04-a100-cores-per-sm").json()["explanation"] is None
    policy.due_at = timezone.now() - timedelta(minutes=1)
    policy.save()
    assert chunk in client.get(EVERY_PART).content.decode()


def test_the_offerings_staff_see_answers_to_check_the_quiz(cast: Cast) -> None:
    html = logged_in(cast.ines).get(EVERY_PART).content.decode()
    assert explanation_html(cast.ines, "13-ridge-point") in html


def test_the_form_grades_and_a_malformed_answer_keeps_what_was_typed(cast: Cast) -> None:
    client = logged_in(cast.alice)
    response = client.post(
        PAGE, {"question": "04-a100-cores-per-sm", "kind": "numeric", "answer": "6,4"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "decimal point" in html and 'value="6,4"' in html
    assert Attempt.objects.count() == 0
    response = client.post(
        PAGE, {"question": "04-a100-cores-per-sm", "kind": "numeric", "answer": "64"}
    )
    assert response.status_code == 302 and response["Location"].endswith("#q-4")
    response = client.post(
        PAGE,
        {
            "question": "12-memory-bound-ops",
            "kind": "multiple",
            "answer": ["softmax", "layernorm", "gelu", "add"],
        },
    )
    assert Attempt.objects.get(question__key="12-memory-bound-ops").is_correct


def test_api_bad_input_gets_a_clear_4xx_and_costs_nothing(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    url = f"{API}/questions/04-a100-cores-per-sm/attempts"
    cases = [
        (b"not json", 400, "not valid JSON"),
        (b"[1, 2]", 400, "'answer'"),
        (b'{"reply": "64"}', 400, "'answer'"),
        (b'{"answer": {"x": 1}}', 400, "as text"),
        (b'{"answer": true}', 400, "as text"),
        (b'{"answer": "1,5"}', 400, "decimal point"),
    ]
    for body, status, says in cases:
        response = client.post(url, data=body, content_type="application/json")
        assert response.status_code == status, body
        assert says in response.json()["error"], body
    assert client.get(url).status_code == 405
    assert (
        client.post(
            f"{API}/questions/nope/attempts", data={"answer": "1"}, content_type="application/json"
        ).status_code
        == 404
    )
    assert client.get("/api/v1/quizzes/nope").status_code == 404
    assert Client().get(API).status_code == 401
    assert Attempt.objects.count() == 0


def test_api_routes_answer_with_or_without_a_trailing_slash(cast: Cast) -> None:
    client = cast.token_client(cast.alice)
    for url in (
        "/api/v1/quizzes",
        "/api/v1/quizzes/",
        API,
        API + "/",
        f"{API}/questions/07-warp-size",
    ):
        assert client.get(url).status_code == 200, url
    assert SLUG in [q["slug"] for q in client.get("/api/v1/quizzes").json()["quizzes"]]
    response = client.post(
        f"{API}/questions/07-warp-size/attempts/",
        data={"answer": "w32"},
        content_type="application/json",
    )
    assert response.status_code == 201 and response.json()["attempt"]["correct"]


def test_only_staff_read_the_scores(cast: Cast) -> None:
    answer(cast.alice, "04-a100-cores-per-sm", "64")
    assert cast.token_client(cast.alice).get(f"{API}/scores").status_code == 403
    rows = cast.token_client(cast.tara).get(f"{API}/scores").json()["scores"]
    assert {r["user"]: r["score"] for r in rows} == {"alice": 1.0, "bob": 0.0}


def test_the_quiz_speaks_chinese(cast: Cast) -> None:
    client = logged_in(cast.alice)
    # Question 4 is asked in part 3 (§15.3); its own address opens that part.
    html = client.get(f"{PAGE}q/4/", HTTP_ACCEPT_LANGUAGE="zh-hans", follow=True).content.decode()
    assert "小测验" in html and "每个 SM 有多少个 FP32 Core" in html
    assert "/quizzes/" in client.get("/").content.decode()
    assert SLUG in client.get("/quizzes/").content.decode()
