"""Local development: `make run` on embedded defaults."""

from config.settings.base import *  # noqa: F403

DEBUG = True
