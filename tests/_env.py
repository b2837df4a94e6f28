"""Loaded with `-p tests._env` before pytest-django reads the settings.

Settings refuse to start without a SECRET_KEY outside debug; tests get a throwaway one.
"""

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-production")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
