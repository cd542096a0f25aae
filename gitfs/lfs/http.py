"""HttpTransfer: objects to and from an LFS server, over its batch API and basic transfer.

One batch request (POST ENDPOINT/objects/batch) per 100 objects tells, per object, where
to GET or PUT it (an action: href, headers, expiry) or why not (404/410: the server does
not have it; 422: invalid). Downloads stream into the clone's store through
ObjectStore.add_checked (size and sha256 checked, nothing kept in memory); uploads stream
from the store's file with a Content-Length; a verify action, when offered, follows the
upload. A download batch answered 404 as a whole (giftless does this when none of its
objects is there) means every object is missing.

Only the endpoint gets `authorization` (the caller decides whether the git remote's
credentials may go there); an action's href gets the headers the server gave for it,
nothing else. 5xx and 429 answers are retried a bounded number of times, after
Retry-After when given; every connection has a timeout. Standard library only.

Thread-safe: no state changes after construction; each request has its own connection.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import ssl
import time
import urllib.parse
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from gitfs.lfs.errors import LfsError
from gitfs.lfs.pointer import Pointer
from gitfs.lfs.ssh import Grant, SshAuthenticator
from gitfs.lfs.store import CHUNK, ObjectStore
from gitfs.repo.remote.server_text import server_words

log = logging.getLogger(__name__)

MEDIA_TYPE = "application/vnd.git-lfs+json"
BATCH_OBJECTS = 100  # objects per batch request, as git-lfs sends them
TIMEOUT = 60.0  # seconds a connection may stay silent
ATTEMPTS = 3  # tries of a request answered 5xx or 429
RETRY_AFTER_MAX = 30.0  # seconds: a longer Retry-After is cut to this
EXPIRY_MARGIN = 5.0  # seconds: an action expiring sooner is asked for again
ANSWER_MAX = 64 << 20  # bytes of a JSON answer read at most
MISSING_CODES = (404, 410)


class TransferFailed(LfsError):
    """A request failed; the message says why, without credentials."""


class _Retry(Exception):
    def __init__(self, why: str, delay: float):
        super().__init__(why)
        self.delay = delay


def ssl_context(ca_file: str = "") -> ssl.SSLContext:
    """The system's trust store, plus ca_file (as the git remote's ssl_ca_file adds it)."""
    context = ssl.create_default_context()
    # Python 3.13 turns on X509_STRICT, which refuses a private CA without a key usage
    # extension; the git remote (libgit2, OpenSSL's defaults) accepts it, so LFS does too.
    context.verify_flags &= ~getattr(ssl, "VERIFY_X509_STRICT", 0)
    if ca_file:
        context.load_verify_locations(ca_file)
    return context


class HttpTransfer:
    def __init__(self, local: ObjectStore, endpoint: str, *, ref: str = "",
                 authorization: Optional[str] = None, context: Optional[ssl.SSLContext] = None,
                 ssh: Optional[SshAuthenticator] = None, sleep: Callable[[float], None] = time.sleep):
        self.local = local
        self.endpoint = endpoint.rstrip("/")
        self.ref = ref  # refs/heads/BRANCH, sent with each batch
        self._authorization = authorization  # for the endpoint only
        self._context = context or ssl_context()
        self._ssh = ssh  # an SSH remote's: endpoint and token from git-lfs-authenticate, if it has it
        self._sleep = sleep

    def __repr__(self) -> str:  # never the authorization
        return f"HttpTransfer({self.endpoint!r})"

    # -- the Transfer protocol

    def download(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        wanted = [pointer for pointer in _unique(pointers) if not self.local.has(pointer)]
        return self._each_batch("download", wanted)

    def upload(self, pointers: Sequence[Pointer]) -> dict[str, str]:
        return self._each_batch("upload", _unique(pointers))

    def _each_batch(self, operation: str, pointers: list[Pointer]) -> dict[str, str]:
        failed: dict[str, str] = {}
        for start in range(0, len(pointers), BATCH_OBJECTS):
            chunk = pointers[start:start + BATCH_OBJECTS]
            try:
                answers = self._batch(operation, chunk)
            except TransferFailed as error:
                failed.update((pointer.oid, str(error)) for pointer in chunk)
                continue
            for pointer in chunk:
                why = self._move(operation, pointer, answers.get(pointer.oid))
                if why is not None:
                    failed[pointer.oid] = why
        return failed

    # -- one object

    def _move(self, operation: str, pointer: Pointer, answer: Optional[dict]) -> Optional[str]:
        """Move one object as the batch answer says; why it failed, or None."""
        try:
            if answer is not None and _expires_soon(answer, operation):
                answer = self._batch(operation, [pointer]).get(pointer.oid)
            if answer is None:
                return "the LFS server did not answer for it"
            error = answer.get("error")
            if isinstance(error, dict):
                code, message = error.get("code"), str(error.get("message") or "")[:200]
                if code in MISSING_CODES:
                    return f"the LFS server does not have it ({code}: {message})"
                return f"the LFS server refuses it ({code}: {message})"
            actions = answer.get("actions") or {}
            if operation == "download":
                action = actions.get("download")
                if not isinstance(action, dict):
                    return "the LFS server offered no download for it"
                self._get(pointer, action)
            else:
                action = actions.get("upload")
                if not isinstance(action, dict):
                    return None  # the server has it already
                self._put(pointer, action)
                verify = actions.get("verify")
                if isinstance(verify, dict):
                    self._verify(pointer, verify)
        except (TransferFailed, LfsError) as error:
            return str(error)
        return None

    def _get(self, pointer: Pointer, action: dict) -> None:
        response = self._request("GET", _href(action), _headers(action))
        try:
            _expect_success(response, f"download of {pointer.oid}")
            self.local.add_checked(response, pointer)
        finally:
            response.close()

    def _put(self, pointer: Pointer, action: dict) -> None:
        headers = dict(_headers(action))
        headers["Content-Type"] = "application/octet-stream"
        headers["Content-Length"] = str(pointer.size)

        def body():  # opened anew for each try
            return self.local.open(pointer)
        response = self._request("PUT", _href(action), headers, body)
        try:
            _expect_success(response, f"upload of {pointer.oid}")
        finally:
            response.close()

    def _verify(self, pointer: Pointer, action: dict) -> None:
        headers = dict(_headers(action))
        headers.update({"Content-Type": MEDIA_TYPE, "Accept": MEDIA_TYPE})
        data = json.dumps({"oid": pointer.oid, "size": pointer.size}).encode()
        response = self._request("POST", _href(action), headers, lambda: data)
        try:
            _expect_success(response, f"verify of {pointer.oid}")
        finally:
            response.close()

    # -- the batch request

    def _batch(self, operation: str, pointers: Sequence[Pointer]) -> dict[str, dict]:
        """{oid: the server's answer for it}; TransferFailed if the batch as a whole failed."""
        request: dict[str, Any] = {"operation": operation, "transfers": ["basic"],
                                   "objects": [{"oid": p.oid, "size": p.size} for p in pointers],
                                   "hash_algo": "sha256"}
        if self.ref:
            request["ref"] = {"name": self.ref}
        data = json.dumps(request).encode()
        headers = {"Accept": MEDIA_TYPE, "Content-Type": MEDIA_TYPE}
        endpoint, authorized = self.endpoint, self._authorization is not None
        if self._authorization is not None:
            headers["Authorization"] = self._authorization
        grant = self._ssh_grant(operation)
        if grant is not None:
            endpoint, authorized = grant.href, bool(grant.header)
            headers.update(grant.header)
        response = self._request("POST", f"{endpoint}/objects/batch", headers, lambda: data)
        try:
            status = response.status
            text = response.read(ANSWER_MAX)
        finally:
            response.close()
        where = _where(endpoint)
        if status == 404 and operation == "download":
            return {p.oid: {"error": {"code": 404, "message": _message(text)}} for p in pointers}
        if status == 401:
            if not authorized:
                raise TransferFailed(f"the LFS server at {where} asks for credentials and none may be sent "
                                     f"there (only to the git remote's own server, or to lfs_url)")
            raise TransferFailed(f"the LFS server at {where} refused the credentials (401)")
        if status == 403:
            raise TransferFailed(f"the LFS server at {where} does not allow {operation}s (403: {_message(text)})")
        if not 200 <= status < 300:
            raise TransferFailed(f"the LFS server at {where} answered {status} to the batch request: "
                                 f"{_message(text)}")
        try:
            answer = json.loads(text)
            objects = answer["objects"]
        except (ValueError, KeyError, TypeError):
            raise TransferFailed(f"the LFS server at {where} answered the batch request with "
                                 f"something else than a batch answer") from None
        transfer = answer.get("transfer", "basic")
        if transfer != "basic":
            raise TransferFailed(f"the LFS server at {where} chose the transfer {transfer!r}; "
                                 f"GitFS speaks 'basic' only")
        now = time.monotonic()
        found: dict[str, dict] = {}
        for item in objects if isinstance(objects, list) else ():
            if isinstance(item, dict) and isinstance(item.get("oid"), str):
                item["_received"] = now
                found[item["oid"]] = item
        return found

    def _ssh_grant(self, operation: str) -> Optional[Grant]:
        if self._ssh is None:
            return None
        try:
            return self._ssh.grant(operation)
        except LfsError as error:
            raise TransferFailed(str(error)) from None

    # -- HTTP

    def _request(self, method: str, url: str, headers: dict[str, str],
                 body: Optional[Callable[[], Any]] = None) -> http.client.HTTPResponse:
        """The response (open: the caller reads and closes it), after at most ATTEMPTS tries
        of answers 5xx/429 and of connections the server dropped."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return self._once(method, url, headers, body)
            except _Retry as retry:
                if attempt == ATTEMPTS:
                    raise TransferFailed(str(retry)) from None
                log.info("LFS %s %s: %s; trying again in %.0f s", method, _where(url), retry, retry.delay)
                self._sleep(retry.delay)
        raise AssertionError("unreachable")

    def _once(self, method: str, url: str, headers: dict[str, str],
              body: Optional[Callable[[], Any]]) -> http.client.HTTPResponse:
        parts = urllib.parse.urlsplit(url)
        where = _where(url)
        connection: http.client.HTTPConnection
        try:
            if parts.scheme == "https":
                connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=TIMEOUT,
                                                         context=self._context, blocksize=CHUNK)
            else:
                connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=TIMEOUT,
                                                        blocksize=CHUNK)
        except ValueError as error:  # a bad port
            raise TransferFailed(f"bad LFS URL {where}: {error}") from None
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
        content = body() if body is not None else None
        try:
            connection.request(method, target, body=content, headers=headers)
            response = connection.getresponse()
        except ssl.SSLCertVerificationError as error:
            connection.close()
            raise TransferFailed(f"the TLS certificate of {where} is not trusted ({error.verify_message}; "
                                 f"give ssl_ca_file=FILE for a private CA)") from None
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                http.client.RemoteDisconnected) as error:
            connection.close()
            raise _Retry(f"the LFS server at {where} dropped the connection ({_reason(error)})", 1.0) from None
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            raise TransferFailed(f"cannot reach the LFS server at {where}: {_reason(error)}") from None
        finally:
            close = getattr(content, "close", None)
            if close is not None:
                close()
        if response.status >= 500 or response.status == 429:
            delay = _retry_after(response.getheader("Retry-After"))
            text = response.read(4096)
            connection.close()
            raise _Retry(f"the LFS server at {where} answered {response.status}: {_message(text)}", delay)
        return response


def _unique(pointers: Sequence[Pointer]) -> list[Pointer]:
    return list({pointer.oid: pointer for pointer in pointers}.values())


def _href(action: dict) -> str:
    href = action.get("href")
    if not isinstance(href, str) or urllib.parse.urlsplit(href).scheme not in ("http", "https"):
        raise TransferFailed(f"the LFS server gave an action without an http(s) href: {str(href)[:100]!r}")
    return href


def _headers(action: dict) -> dict[str, str]:
    given = action.get("header")
    return {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}


def _expires_soon(answer: dict, operation: str) -> bool:
    action = (answer.get("actions") or {}).get(operation)
    if not isinstance(action, dict):
        return False
    left: Optional[float] = None
    if isinstance(action.get("expires_in"), (int, float)) and action["expires_in"] > 0:
        left = action["expires_in"] - (time.monotonic() - answer.get("_received", time.monotonic()))
    elif isinstance(action.get("expires_at"), str):
        try:
            at = datetime.fromisoformat(action["expires_at"].replace("Z", "+00:00"))
            left = (at - datetime.now(timezone.utc)).total_seconds()
        except (ValueError, TypeError):
            left = None
    return left is not None and left < EXPIRY_MARGIN


def _expect_success(response: http.client.HTTPResponse, what: str) -> None:
    if not 200 <= response.status < 300:
        text = response.read(4096)
        if response.status in MISSING_CODES:
            raise TransferFailed(f"the LFS server does not have it ({response.status}: {_message(text)})")
        raise TransferFailed(f"the LFS server answered {response.status} to the {what}: {_message(text)}")


def _retry_after(value: Optional[str]) -> float:
    """Seconds to wait: Retry-After's (seconds or an HTTP date), within [1, RETRY_AFTER_MAX]."""
    seconds = 1.0
    if value:
        try:
            seconds = float(value)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
                if when.tzinfo is None:
                    when = when.replace(tzinfo=timezone.utc)
                seconds = (when - datetime.now(timezone.utc)).total_seconds()
            except (TypeError, ValueError):
                pass
    return min(max(seconds, 1.0), RETRY_AFTER_MAX)


def _message(text: bytes) -> str:
    """The server's message: a JSON answer's "message", else the start of the text."""
    try:
        value = json.loads(text)
        if isinstance(value, dict) and value.get("message"):
            return server_words(str(value["message"]), 200)
    except ValueError:
        pass
    return server_words(text[:400].decode("utf-8", "replace"), 200) or "no message"


def _reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or error.__class__.__name__


def _where(url: str) -> str:
    """scheme://host:port/path of a URL, without user information or query."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
