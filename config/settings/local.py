"""Local development: `make run` on embedded defaults."""

from config.settings.base import *  # noqa: F403  (a settings layer takes every base setting)

DEBUG = True
