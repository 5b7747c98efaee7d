"""How a failed request to the API server is said: the one place that reads its errors.

Code outside `gpuop.kube` sees gpuop's own errors, made here from what the client raised
(`gpuop.kube.ops` turns every failure of its calls into one of them):

* :class:`KubeApiError`
  * :class:`Refused`: an error answer, its `code` the HTTP status
    * :class:`NotFound` (404), :class:`Forbidden` (403), :class:`Conflict` (409),
      :class:`Invalid` (422), :class:`TooManyRequests` (429)
  * :class:`Unreachable`: no answer at all (connect, TLS, timeout)

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
    "Conflict",
    "Forbidden",
    "Invalid",
    "KubeApiError",
    "NotFound",
    "Refused",
    "TooManyRequests",
    "Unreachable",
    "describe",
    "failure",
    "refusal",
    "status_code",
    "translated",
    "unanswered",
]


class KubeApiError(Exception):
    """A request to the API server failed; `str()` is the one line that says how."""

    code: int | None = None

    def __init__(self, message: str, *, reason: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        # The API server's own words (Status.message), without the code and reason.
        self.detail = detail or message


class Refused(KubeApiError):
    """The API server answered with an error status."""

    def __init__(self, code: int, message: str, *, reason: str = "", detail: str = "") -> None:
        super().__init__(message, reason=reason, detail=detail)
        self.code = code


class NotFound(Refused):
    """404: the object (or the kind: its CRD not installed) does not exist."""


class Forbidden(Refused):
    """403: the account may not do this."""


class Conflict(Refused):
    """409: the object changed since it was read, or already exists."""


class Invalid(Refused):
    """422: the object is refused as written (an immutable field, a failed validation)."""


class TooManyRequests(Refused):
    """429: priority and fairness asked the client to come back later."""


class Unreachable(KubeApiError):
    """No answer at all: connect, TLS or timeout."""


_REFUSALS: dict[int, type[Refused]] = {
    404: NotFound,
    403: Forbidden,
    409: Conflict,
    422: Invalid,
    429: TooManyRequests,
}

# What a request to the API server raises: an error answer or no answer.
API_ERRORS: tuple[type[Exception], ...] = (KubeApiError, ApiError, httpx2.HTTPError)


def translated(exc: BaseException) -> KubeApiError:
    """gpuop's error for what the client raised (one of `API_ERRORS`)."""
    if isinstance(exc, KubeApiError):
        return exc
    code = status_code(exc)
    if code is None:
        return Unreachable(describe(exc))
    if isinstance(exc, ApiError):
        reason, detail = exc.status.reason or "", exc.status.message or ""
    else:
        reason, detail = "", ""
    return _REFUSALS.get(code, Refused)(code, describe(exc), reason=reason, detail=detail)


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of an error answer; None when there was no answer."""
    if isinstance(exc, KubeApiError):
        return exc.code
    if isinstance(exc, ApiError):
        code = getattr(exc.status, "code", None)
        return code if isinstance(code, int) else None
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code
    return None


def unanswered(exc: BaseException) -> bool:
    """Whether the request got no answer (connect, TLS, timeout)."""
    return isinstance(exc, (Unreachable, httpx2.RequestError))


def describe(exc: BaseException) -> str:
    """One line for a failed API request: the status and message, or why there was no answer."""
    if isinstance(exc, KubeApiError):
        return str(exc)
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
    if isinstance(exc, KubeApiError):
        message = exc.detail
    elif isinstance(exc, ApiError):
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
