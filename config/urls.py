from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from courseware.accounts import views as account_views
from courseware.fleet import views as fleet_views
from courseware.gradebook import views as gradebook_views
from courseware.quizzes import urls as quiz_urls
from courseware.roofline import views as roofline_views
from courseware.submissions import api, download_views, regrade_views, review_views, views

# API routes answer with or without a trailing slash.
api_v1 = [
    re_path(r"^submissions/?$", api.submissions_collection, name="api-submissions"),
    re_path(
        r"^submissions/(?P<submission_id>[0-9]+)/?$",
        api.submission_detail,
        name="api-submission-detail",
    ),
    re_path(
        r"^submissions/(?P<submission_id>[0-9]+)/notebook/?$",
        api.submission_notebook,
        name="api-submission-notebook",
    ),
    re_path(r"^exercises/?$", api.exercises_collection, name="api-exercises"),
    re_path(
        r"^exercises/(?P<slug>[-a-zA-Z0-9_]+)/?$", api.exercise_detail, name="api-exercise-detail"
    ),
    re_path(
        r"^exercises/(?P<slug>[-a-zA-Z0-9_]+)/starter/?$",
        api.exercise_starter,
        name="api-exercise-starter",
    ),
    *quiz_urls.api_urls,
]

urlpatterns = [
    path("", views.home, name="home"),
    path("exercises/<slug:slug>/", views.exercise_detail, name="exercise-detail"),
    path("exercises/<slug:slug>/release.ipynb", views.notebook_release, name="notebook-release"),
    path("submissions/<int:submission_id>/", views.submission_detail, name="submission-detail"),
    path("submissions/<int:submission_id>/diff/", views.submission_diff, name="submission-diff"),
    path("review/", review_views.review_queue, name="review-queue"),
    path("review/similarity/", include("courseware.similarity.urls")),
    path("review/regrade/", regrade_views.regrade_start, name="regrade-start"),
    path("review/regrade/<int:batch_id>/", regrade_views.regrade_batch, name="regrade-batch"),
    path(
        "review/regrade/<int:batch_id>/progress",
        regrade_views.regrade_progress,
        name="regrade-progress",
    ),
    path(
        "submissions/<int:submission_id>/notebook.ipynb",
        download_views.notebook_download,
        name="submission-notebook",
    ),
    path(
        "submissions/<int:submission_id>/hand-grades",
        review_views.hand_grades,
        name="submission-hand-grades",
    ),
    path("gradebook/", gradebook_views.gradebook_index, name="gradebook-index"),
    path("gradebook/<int:offering_id>/", gradebook_views.gradebook_detail, name="gradebook-detail"),
    path(
        "gradebook/<int:offering_id>/canvas.csv",
        gradebook_views.gradebook_export,
        name="gradebook-export",
    ),
    path(
        "submissions/<int:submission_id>/manual-grade",
        review_views.manual_grade,
        name="submission-manual-grade",
    ),
    path(
        "submissions/<int:submission_id>/override",
        review_views.override,
        name="submission-override",
    ),
    path(
        "submissions/<int:submission_id>/regrade", review_views.regrade, name="submission-regrade"
    ),
    path("quizzes/", include(quiz_urls.page_urls)),
    path("roofline/", roofline_views.roofline, name="roofline"),
    path("instructor/fleet/", fleet_views.fleet, name="fleet"),
    path("instructor/", include("courseware.instructor.urls")),
    path("lti/", include("courseware.lti.urls")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/token/", account_views.api_token, name="api-token"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    re_path(r"^api/v1/", include(api_v1)),
]
