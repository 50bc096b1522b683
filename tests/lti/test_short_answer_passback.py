"""A TA's grade of a short answer reaches the LMS as the quiz's new total."""

from __future__ import annotations

from decimal import Decimal

from courseware.courses.models import Item
from courseware.lti.models import LtiIdentity
from courseware.quizzes.short_answers import short_answer_grade, short_answer_save
from tests.courseware.quizzes.conftest import SLUG
from tests.lti.conftest import World
from tests.lti.passback_helpers import as_decimal, run_lti_queue
from tests.lti.platform import LEARNER

KEY = "s5-flashattention"


def test_a_graded_short_answer_is_sent_to_the_lms(live_world: World) -> None:
    live_world.link_course()
    live_world.lms.add_user("lms-sam", "Sam Student", "lms-sam@uni.example", LEARNER)
    quiz = Item.objects.get(slug=SLUG)
    link = live_world.lms.add_link(
        "Quiz",
        custom={"item": SLUG},
        lineitem={"label": "Quiz", "scoreMaximum": float(quiz.max_score), "tag": SLUG},
    )
    page = live_world.browser().launch(live_world.lms.login_initiation_url("lms-sam", link=link))
    assert page.status_code == 200, page.text[:400]
    student = LtiIdentity.objects.get(sub="lms-sam").user

    answer = short_answer_save(
        user=student,
        quiz_slug=SLUG,
        key=KEY,
        text="The S x S scores never reach HBM: tiles stay in SRAM, with an online softmax.",
    )
    run_lti_queue()
    assert live_world.lms.scores_for(link.lineitem, "lms-sam") == []  # nothing graded yet
    short_answer_grade(
        grader=live_world.cast.tara,
        answer=answer,
        points={"quadratic-traffic": "1", "tiling": "1", "online-softmax": "0.5"},
    )
    run_lti_queue()
    sent = live_world.lms.scores_for(link.lineitem, "lms-sam")[-1]
    assert as_decimal(sent["scoreGiven"]) == Decimal("2.5")
    assert as_decimal(sent["scoreMaximum"]) == quiz.max_score
