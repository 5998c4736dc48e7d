"""Every test starts in English, whatever an earlier test or the shell chose (the lessons' language
lives in the EFFITRAIN_LANGUAGE environment variable, which processes inherit); `shown` records what
an explorer widget displays."""

import pytest

from effitrain_lessons.i18n import ENVIRONMENT


@pytest.fixture(autouse=True)
def english_unless_asked(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)


@pytest.fixture
def shown(monkeypatch):
    """What an explorer widget shows, IPython's display replaced: ("display", object) and ("update", figure)."""
    seen = []

    class Handle:
        def update(self, obj):
            seen.append(("update", obj))

    def fake_display(obj, display_id=False):
        seen.append(("display", obj))
        return Handle() if display_id else None

    import IPython.display

    monkeypatch.setattr(IPython.display, "display", fake_display)
    return seen
