"""Routes: pages under /quizzes/, API under /api/v1/quizzes (with or without trailing slash)."""

from django.urls import path, re_path

from courseware.quizzes import api, short_answer_views, views

_SLUG = r"(?P<slug>[-a-zA-Z0-9_]+)"
_KEY = r"(?P<key>[-a-zA-Z0-9_]+)"

page_urls = [
    path("", views.quiz_list, name="quiz-list"),
    path("<slug:slug>/", views.quiz_detail, name="quiz-detail"),
    path("<slug:slug>/q/<int:number>/", views.quiz_question, name="quiz-question"),
    path(
        "<slug:slug>/explain/<slug:key>/",
        short_answer_views.short_answer_page,
        name="quiz-short-answer",
    ),
    path(
        "<slug:slug>/explain/<slug:key>/review/",
        short_answer_views.short_answer_review,
        name="quiz-short-answer-review",
    ),
]

api_urls = [
    re_path(r"^quizzes/?$", api.quizzes_collection, name="api-quizzes"),
    re_path(rf"^quizzes/{_SLUG}/?$", api.quiz_detail, name="api-quiz-detail"),
    re_path(rf"^quizzes/{_SLUG}/scores/?$", api.quiz_scores, name="api-quiz-scores"),
    re_path(
        rf"^quizzes/{_SLUG}/questions/{_KEY}/?$", api.question_detail, name="api-quiz-question"
    ),
    re_path(
        rf"^quizzes/{_SLUG}/questions/{_KEY}/attempts/?$",
        api.attempts_collection,
        name="api-quiz-attempts",
    ),
]
