"""How a failed request to the API server is said: the one place that reads its errors.

What a request raises, as lightkube and its HTTP library raise it:

* ``httpx2.HTTPError``
  * ``HTTPStatusError``: an error answer (4xx/5xx)
    * ``lightkube.ApiError``: one whose body is a Kubernetes ``Status``
      (a plain-text answer, such as a 404 for an API group the server does not serve or
      a 429 from priority and fairness, stays an ``HTTPStatusError``)
  * ``RequestError``: no answer at all (connect, TLS, timeout)

:func:`describe` turns any of them into one line, :func:`refusal` says why a list was
refused in a reader's words (the CRD is not installed, not allowed), :func:`failure` is
the sentence a command ends with, and :func:`status_code` is the answer's code.
"""

from __future__ import annotations

import httpx2
from lightkube.core.exceptions import ApiError

__all__ = [
    "API_ERRORS",
    "describe",
    "failure",
    "refusal",
    "status_code",
    "unanswered",
]

# What a request to the API server raises: an error answer or no answer.
API_ERRORS: tuple[type[Exception], ...] = (ApiError, httpx2.HTTPError)


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an error answer; None when there was no answer."""
    if isinstance(exc, ApiError):
        code = getattr(exc.status, "code", None)
        return code if isinstance(code, int) else None
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code
    return None


def unanswered(exc: BaseException) -> bool:
    """Whether the request got no answer (connect, TLS, timeout)."""
    return isinstance(exc, httpx2.RequestError)


def describe(exc: BaseException) -> str:
    """One line for a failed API request: the status and message, or why there was no answer."""
    if isinstance(exc, ApiError):
        return f"{exc.status.code} {exc.status.reason or ''}: {exc.status.message}".replace(
            " :", ":"
        )
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"{exc.response.status_code} {exc.response.reason_phrase}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def refusal(exc: BaseException) -> str:
    """Why listing a kind was refused, in the words every reader reports skipped kinds."""
    code = status_code(exc)
    if code == 404:
        return "the CRD is not installed"
    if code == 403:
        return "not allowed to list them"
    if isinstance(exc, ApiError):
        message = getattr(exc.status, "message", None) or str(exc)
    elif isinstance(exc, httpx2.HTTPStatusError):
        message = exc.response.text.strip()[:200] or str(exc)
    else:
        message = str(exc)
    return f"the API answered {code}: {message}"


def failure(exc: BaseException) -> str:
    """The sentence a command that could not read the cluster ends with."""
    if unanswered(exc) or status_code(exc) is None:
        return f"cannot reach the cluster: {exc}"
    return f"the API server refused: {describe(exc)}"
