"""Whether the Hugging Face Hub can be reached, asked once, quickly, before any download.

The default path of every lesson is offline; the hub path (GLUE MRPC, `bert-base-uncased`) is for
learners with a network (lessons 2-4), and `effitrain info` reports what it finds.
"""

from __future__ import annotations

import os
import socket
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from effitrain_lessons.shared.i18n import _, phrase

HUB = ("huggingface.co", 443)


def offline_by_choice() -> bool:
    """True when the learner set HF_HUB_OFFLINE (read now, not when huggingface_hub was imported)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Open (and close) one TCP connection to the hub within `timeout` seconds, name lookup included."""
    if offline_by_choice():
        return False

    def connect() -> None:
        socket.create_connection(HUB, timeout=timeout).close()

    pool = ThreadPoolExecutor(max_workers=1)  # name lookup ignores socket timeouts: bound it here
    try:
        pool.submit(connect).result(timeout=timeout)
        return True
    except (OSError, FutureTimeout):
        return False
    finally:
        pool.shutdown(wait=False)


def require_hub(what: str, instead: str) -> None:
    """Raise one sentence saying what to use instead when the hub cannot be reached.

    `what` is shown as it is given: a name, or a phrase already in the learner's language."""
    if not hub_reachable():
        reason = _("HF_HUB_OFFLINE is set") if offline_by_choice() else _("no network connection to it")
        raise RuntimeError(
            phrase(
                "Cannot load {what} from the Hugging Face Hub ({reason}): use {instead} instead.",
                what=what,
                reason=reason,
                instead=instead,
            )
        )
