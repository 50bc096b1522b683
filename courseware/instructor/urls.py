"""Routes under /instructor/ (included from config/urls.py)."""

from django.urls import path

from courseware.instructor import views

urlpatterns = [
    path("", views.index, name="instructor-index"),
    path("content/", views.content, name="instructor-content"),
    path("<int:offering_id>/", views.offering_home, name="instructor-offering"),
    path("<int:offering_id>/preview/<slug:slug>/", views.preview, name="instructor-preview"),
    path(
        "<int:offering_id>/statistics/<slug:slug>/",
        views.statistics,
        name="instructor-statistics",
    ),
    path("<int:offering_id>/extensions/", views.extensions, name="instructor-extensions"),
    path(
        "<int:offering_id>/extensions/<int:extension_id>/revoke",
        views.extension_remove,
        name="instructor-extension-revoke",
    ),
    path("<int:offering_id>/roster/", views.roster, name="instructor-roster"),
    path(
        "set-password/<uidb64>/<token>/",
        views.SetPasswordView.as_view(),
        name="instructor-set-password",
    ),
]
