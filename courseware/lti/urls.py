"""Routes under /lti/ (included from config/urls.py).

The LMS calls login (OIDC third-party initiated login), launch (the id_token post, for
resource links and deep linking requests alike) and jwks; the rest are pages."""

from django.urls import path

from courseware.lti import staff_views, views

urlpatterns = [
    path("login/", views.login, name="lti-login"),
    path("launch/", views.launch, name="lti-launch"),
    path("jwks/", views.jwks, name="lti-jwks"),
    path("link-account/", views.link_account, name="lti-link-account"),
    path("deep-link/", views.deep_link, name="lti-deep-link"),
    path("platforms/", staff_views.platforms, name="lti-platforms"),
    path("offering/<int:offering_id>/", staff_views.offering_page, name="lti-offering"),
    path("offering/<int:offering_id>/link", staff_views.offering_link, name="lti-offering-link"),
    path(
        "offering/<int:offering_id>/resource-link",
        staff_views.resource_link,
        name="lti-resource-link",
    ),
    path(
        "offering/<int:offering_id>/roster-sync",
        staff_views.roster_sync_view,
        name="lti-roster-sync",
    ),
    path("offering/<int:offering_id>/send-again", staff_views.send_again, name="lti-send-again"),
]
