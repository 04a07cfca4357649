"""The error tree is the one catalog of error codes: every surface and every list reads it.

Pairs with `src/svc/_errors.py`.
"""

from __future__ import annotations

import re
import typing

import mcp_types as types
import msgspec
import pytest
from mcp.shared.exceptions import MCPError

from svc import _errors
from svc._errors import ERRORS, Internal, SvcError, error_class
from svc.api import error_result
from svc.api._http import error_response
from svc.capabilities import builtin_registry
from svc.nursery._events import ErrorCode
from svc.surfaces import render_openapi

#: What each error answers over HTTP and on the command line; pinned, so a change here is deliberate.
SERVED = {
    "InvalidInput": (400, "invalid_input", 10),
    "Forbidden": (403, "forbidden", 10),
    "NotFound": (404, "not_found", 10),
    "MethodNotAllowed": (405, "method_not_allowed", 2),
    "RequestTimeout": (408, "request_timeout", 10),
    "PayloadTooLarge": (413, "payload_too_large", 10),
    "Refused": (422, "refused", 10),
    "HeadersTooLarge": (431, "headers_too_large", 10),
    "Internal": (500, "internal", 1),
    "Unavailable": (503, "unavailable", 1),
}


def _tree(cls: type[SvcError]) -> list[type[SvcError]]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _tree(sub))]


def test_errors_is_every_class_of_the_tree_once_by_status() -> None:
    assert set(ERRORS) == set(_tree(SvcError)) - {SvcError}
    assert list(ERRORS) == sorted(ERRORS, key=lambda cls: cls.status)
    assert len({cls.code for cls in ERRORS}) == len(ERRORS)
    assert {cls.__name__: (cls.status, cls.code, cls.exit_code) for cls in ERRORS} == SERVED
    assert {cls.__name__ for cls in ERRORS} <= set(_errors.__all__)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda cls: cls.code)
def test_every_code_reads_back_as_its_class(cls: type[SvcError]) -> None:
    assert error_class(cls.code) is cls


def test_an_unknown_code_reads_as_internal() -> None:
    assert error_class("upgrade_required") is Internal
    assert error_class("") is Internal


def test_the_root_reads_as_internal_and_no_class_carries_a_json_rpc_code() -> None:
    assert (SvcError.status, SvcError.code, SvcError.exit_code) == (Internal.status, Internal.code, 1)
    assert not any(hasattr(cls, "jsonrpc_code") for cls in _tree(SvcError))


def test_the_docstring_draws_the_tree_as_it_is() -> None:
    doc = _errors.__doc__ or ""
    drawn = re.findall(r"^    (?:[├└]── )?(\w+)\s+(\d{3}) (\w+)\s+exit (\d+)$", doc, re.MULTILINE)
    tree: list[type[SvcError]] = [SvcError, *ERRORS]
    assert drawn == [(cls.__name__, str(cls.status), cls.code, str(cls.exit_code)) for cls in tree]


def test_the_openapi_document_lists_every_error_of_the_tree() -> None:
    listed = render_openapi(builtin_registry())["x-svc"]["errors"]
    assert listed == [{"status": cls.status, "code": cls.code, "when": cls.when} for cls in ERRORS]
    assert all(row["when"] for row in listed)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda cls: cls.code)
def test_http_answers_every_class_with_its_status_and_error_body(cls: type[SvcError]) -> None:
    status, _, body = error_response(cls("the message"))
    assert status == cls.status
    assert msgspec.json.decode(body) == {"error": {"code": cls.code, "message": "the message"}}


@pytest.mark.parametrize("cls", ERRORS, ids=lambda cls: cls.code)
def test_mcp_answers_every_class_but_internal_as_a_tool_error(cls: type[SvcError]) -> None:
    if cls is Internal:
        with pytest.raises(MCPError) as caught:
            error_result(cls("internal error (correlation id c-1)"))
        assert caught.value.error.code == types.INTERNAL_ERROR
        return
    result = error_result(cls("the message"))
    assert result.is_error
    assert result.meta == {"svc": {"error": {"code": cls.code}}}


def test_every_execution_failure_code_is_a_code_of_the_tree_or_cancelled() -> None:
    codes = set(typing.get_args(ErrorCode))
    assert codes - {"cancelled"} <= {cls.code for cls in ERRORS}
