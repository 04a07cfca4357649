"""Finding the server that serves this checkout (through its lease) and calling a capability on it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from svc import _errors
from svc.layer import Repository, pid_alive, read_lease
from svc.registry import ErrorBody

if TYPE_CHECKING:
    import httpx

    from svc.registry import Capability

__all__ = ["NO_SERVER", "call_remote", "find_server", "probe_server"]

_log = logging.getLogger("svc.cli")
NO_SERVER = "no server serves this repository (start one with svc serve)"
PROBE_SECONDS = 2.0
CALL_SECONDS = 30.0
_ERROR_BODY = msgspec.json.Decoder(ErrorBody)


async def find_server(repo: Repository, client: httpx.AsyncClient) -> str | None:
    """The URL of the live server serving `repo`, or None (LAYER: read, wait for the URL, pid, probe)."""
    lease = read_lease(repo)
    with trio.move_on_after(2.0):
        while lease is not None and lease.url is None:
            await trio.sleep(0.1)
            lease = read_lease(repo)
    if lease is None or lease.url is None or not pid_alive(lease.pid):
        return None
    return lease.url if await probe_server(client, lease.url, repo) else None


async def probe_server(
    client: httpx.AsyncClient, url: str, repo: Repository, *, seconds: float = PROBE_SECONDS
) -> bool:
    """Whether `GET <url>/` answers, within `seconds`, as the svc leaseholder serving `repo` (LAYER §6)."""
    try:
        with trio.fail_after(seconds):
            answer = await client.get(url + "/", headers={"Accept": "application/json"})
    except (trio.TooSlowError, OSError) as exc:
        _log.debug("probe of %s failed: %s", url, exc)
        return False
    except Exception as exc:  # httpx transport errors
        _log.debug("probe of %s failed: %s", url, exc)
        return False
    try:
        home = answer.json()
    except ValueError:
        return False
    return (
        answer.status_code == 200
        and isinstance(home, dict)
        and home.get("name") == "svc"
        and home.get("repository_id") == repo.id
        and home.get("leaseholder") is not False
    )


async def call_remote(client: httpx.AsyncClient, url: str, cap: Capability, params: msgspec.Struct) -> bytes:
    """Call `cap` on the server at `url` through its HTTP route; an error answer is raised as `SvcError`.

    Raises:
        SvcError: the server's ErrorBody, as the matching class.
        Unavailable: the server did not answer within 30 s or could not be reached.
    """
    http = cap.exposure.http
    assert http is not None
    values: dict[str, Any] = msgspec.to_builtins(params)
    try:
        with trio.fail_after(CALL_SECONDS):
            if http.method == "GET":
                query = {k: _text(v) for k, v in values.items() if v is not None}
                answer = await client.get(url + http.path, params=query)
            else:
                answer = await client.post(url + http.path, content=msgspec.json.encode(values))
    except trio.TooSlowError:
        raise _errors.Unavailable(f"the server at {url} did not answer within {CALL_SECONDS:.0f} s") from None
    except Exception as exc:
        raise _errors.Unavailable(f"the server at {url} cannot be reached: {exc}") from None
    if answer.status_code == 200:
        return answer.content
    try:
        error = _ERROR_BODY.decode(answer.content).error
    except msgspec.DecodeError:
        raise _errors.Internal(f"the server answered {answer.status_code}") from None
    raise _errors.error_class(error.code)(error.message)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
