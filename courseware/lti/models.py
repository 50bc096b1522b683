"""LTI 1.3: the tool's keys, the platforms (LMSes) registered with it, and what launches made.

Platform (one registration: issuer + client id) → Deployment (the ids under which the LMS
installed the tool). A launch brings an LtiContext (the LMS course; an instructor links it to
an offering) and a ResourceLink (the placement in that course; it opens one item). Each LMS
user is an LtiIdentity (the platform's `sub`) of one site account. ScoreSend records every
grade sent back to an LMS line item; RosterSync every names-and-roles sync.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Item, Offering


class ToolKey(models.Model):
    """One RSA key pair of the tool. The newest active one signs; every active one is in the
    JWKS, so platforms that cached an older key keep verifying during a rotation. The private
    key is read only to sign and is never shown (not in a page, the admin or a command)."""

    kid = models.CharField(max_length=100, unique=True)
    public_key_pem = models.TextField()
    private_key_pem = models.TextField()
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.kid


class Platform(models.Model):
    """An LMS registration: what the LMS's admin page gives for this tool."""

    name = models.CharField(_("name"), max_length=200)
    issuer = models.CharField(_("issuer (iss)"), max_length=255)
    client_id = models.CharField(_("client ID"), max_length=255)
    auth_login_url = models.URLField(_("authentication request URL"), max_length=500)
    auth_token_url = models.URLField(_("access token URL"), max_length=500)
    key_set_url = models.URLField(_("public keyset (JWKS) URL"), max_length=500)
    auth_audience = models.CharField(
        _("token audience"),
        max_length=500,
        blank=True,
        help_text=_("Only if the LMS asks for one; empty: the access token URL."),
    )
    frame_origins = models.TextField(
        _("LMS web addresses"),
        blank=True,
        help_text=_(
            "The addresses (scheme and host) the LMS's pages are served from, one per line: "
            "only these may show the site in a frame. Empty: the issuer's and the "
            "authentication URL's."
        ),
    )
    registered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("LMS platform")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "client_id"],
                name="lti_one_registration",
                violation_error_message=_(
                    "This issuer and client ID are registered already: add deployment IDs to it."
                ),
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.issuer}, {self.client_id})"


class Deployment(models.Model):
    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="deployments")
    deployment_id = models.CharField(_("deployment ID"), max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["platform", "deployment_id"], name="lti_one_deployment_id"
            )
        ]

    def __str__(self) -> str:
        return self.deployment_id


class LtiIdentity(models.Model):
    """An LMS user (the platform's stable `sub`) and the site account it signs in as."""

    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="identities")
    sub = models.CharField(max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_identities"
    )
    # True when the person proved they own an existing account (its password) to link it.
    linked_existing_account = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["platform", "sub"], name="lti_one_account_per_sub"),
            models.UniqueConstraint(fields=["platform", "user"], name="lti_one_sub_per_account"),
        ]

    def __str__(self) -> str:
        return f"{self.sub} on {self.platform.name}"


class LtiContext(models.Model):
    """An LMS course (the launch's context claim), and the offering an instructor linked it to.

    The service URLs are the latest launch's: the roster sync and grade passback use them."""

    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="contexts")
    context_id = models.CharField(max_length=255)
    deployment_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    label = models.CharField(max_length=255, blank=True)
    offering = models.ForeignKey(
        Offering, on_delete=models.SET_NULL, null=True, blank=True, related_name="lti_contexts"
    )
    linked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    linked_at = models.DateTimeField(null=True, blank=True)
    memberships_url = models.URLField(max_length=800, blank=True)
    lineitems_url = models.URLField(max_length=800, blank=True)
    ags_scopes = models.JSONField(default=list)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    last_launch_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-last_launch_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["platform", "context_id"], name="lti_one_context")
        ]

    def __str__(self) -> str:
        return self.title or self.label or self.context_id


class ResourceLink(models.Model):
    """A placement of the tool in an LMS course, and the item it opens."""

    context = models.ForeignKey(LtiContext, on_delete=models.CASCADE, related_name="links")
    resource_link_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    item = models.ForeignKey(
        Item, on_delete=models.SET_NULL, null=True, blank=True, related_name="lti_links"
    )
    # The LMS gradebook column (AGS line item) scores for this placement go to.
    lineitem_url = models.URLField(max_length=800, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["context", "resource_link_id"], name="lti_one_resource_link"
            )
        ]

    def __str__(self) -> str:
        return self.title or self.resource_link_id


class UsedNonce(models.Model):
    """Nonces of launches already accepted: an id_token posted a second time is refused."""

    platform = models.ForeignKey(Platform, on_delete=models.CASCADE, related_name="+")
    nonce = models.CharField(max_length=255)
    used_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["platform", "nonce"], name="lti_nonce_used_once")
        ]


class LaunchValue(models.Model):
    """pylti1p3's launch data storage (state, nonces, launch claims), in the database so that
    every web process sees what another one stored during the login."""

    key = models.CharField(max_length=255, unique=True)
    value = models.JSONField(null=True)
    expires_at = models.DateTimeField(null=True, db_index=True)


class SendStatus(models.TextChoices):
    QUEUED = "queued", _("waiting to be sent")
    RETRYING = "retrying", _("LMS unreachable: trying again")
    SENT = "sent", _("sent")
    FAILED = "failed", _("not sent")
    SKIPPED = "skipped", _("nothing to send")


class SendReason(models.TextChoices):
    GRADED = "graded", _("graded")
    REGRADED = "regraded", _("regraded")
    OVERRIDDEN = "overridden", _("score overridden")
    HAND_GRADED = "hand_graded", _("answer graded by a person")
    QUIZ = "quiz", _("quiz answered")
    LATE_PENALTY = "late_penalty", _("late penalty changed")
    RESENT = "resent", _("sent again by staff")


class ScoreSend(models.Model):
    """One score change going to one LMS line item: what was sent, when, and the answer."""

    link = models.ForeignKey(ResourceLink, on_delete=models.CASCADE, related_name="sends")
    offering = models.ForeignKey(Offering, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    lti_user_id = models.CharField(max_length=255)
    reason = models.CharField(max_length=20, choices=SendReason.choices)
    status = models.CharField(
        max_length=10, choices=SendStatus.choices, default=SendStatus.QUEUED, db_index=True
    )
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    # What the last attempt sent (the gradebook's score at that moment) and what came back.
    score_given = models.DecimalField(max_digits=10, decimal_places=3, null=True, blank=True)
    score_maximum = models.DecimalField(max_digits=10, decimal_places=3, null=True, blank=True)
    activity_progress = models.CharField(max_length=20, blank=True)
    grading_progress = models.CharField(max_length=20, blank=True)
    score_timestamp = models.CharField(max_length=40, blank=True)
    response_status = models.PositiveIntegerField(null=True, blank=True)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.item.slug} for {self.lti_user_id}: {self.status}"


class RosterSync(models.Model):
    """One names-and-roles sync of an LMS course into its offering, and what it did."""

    context = models.ForeignKey(LtiContext, on_delete=models.CASCADE, related_name="syncs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    error = models.TextField(blank=True)
    report = models.JSONField(default=dict)

    class Meta:
        ordering = ["-created_at", "-id"]
