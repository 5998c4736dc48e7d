"""Every test starts in English, whatever an earlier test or the shell chose (the lessons' language
lives in the EFFITRAIN_LANGUAGE environment variable, which processes inherit)."""

import pytest

from effitrain_lessons.i18n import ENVIRONMENT


@pytest.fixture(autouse=True)
def english_unless_asked(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)
