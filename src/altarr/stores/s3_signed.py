"""S3 reads through presigned URLs on the standard library's reader: the read path of
:class:`~altarr.stores.ObstoreStore` for ``s3://`` URLs (``http_client="stdlib"``, the default).

Why (numbers in ``benchmarks/README.md``, "S3 reads through presigned URLs"): a large read is CPU-bound
on the client once the bytes arrive, and obstore spent 8-10 ms of CPU to bring in the four whole shards
(11.5 MB) of a 128x256x256 slab from a loopback moto server, where the same ``GET`` requests on a
kept-alive :mod:`http.client` connection (:class:`~altarr.stores.http_get.HttpReader`, one buffered
read into one ``bytes`` per answer) spent 5-6 ms. The request is signed by obstore itself
(:func:`obstore.sign`, Signature Version 4 in the query string, 12 us a key): the credentials, their
refresh, the region, the endpoint, path- or virtual-hosted-style addressing and requester-pays are all
obstore's, as for its own requests; the ``Range`` header is not part of a presigned URL's signature and is
sent beside it. A URL is used again for the same key for five minutes (:data:`REUSE_SECONDS`): signing
costs 140 us right after a wait for an answer, and a read's chunk request names the key its index
request just signed.

Every request it cannot answer is declined and sent again through obstore, exactly as for HTTP (see
:mod:`altarr.stores.http_get`): a ``403`` (a bucket policy that refuses presigned URLs, an expired
credential), redirects, ``5xx``, answers without an ``ETag``, a signing failure (no credentials: obstore
then reports it in its own words). After :data:`~altarr.stores.http_get.DECLINES_BEFORE_REST` declines in
a row it rests for a minute and obstore reads everything meanwhile, so a setup where presigned URLs never
work costs a few requests, not two requests a read. ``HEAD``, listings and writes are obstore's.

Only used where obstore's own ``GET`` would carry nothing a presigned URL leaves out (:func:`usable_for`):
storage options among :data:`SAFE_OPTIONS` (endpoint, region, credentials and their sources, addressing,
requester-pays, write settings) with ``client_options`` limited to ``allow_http``; none of
:data:`UNSAFE_ENV` in the environment (unsigned access, S3 Express, an SSE-C key, obstore's client
settings such as a proxy or timeouts); and no proxy for the endpoint's host in the environment.

Example:
    >>> usable_for("s3://bucket/data", {"region": "eu-west-1"}, env={})
    True
    >>> usable_for("s3://bucket/data", {"skip_signature": True}, env={})
    False
"""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from . import http_get
from .http_get import HttpReader, Resting, reader_for
from .ranges import ByteRequest

__all__ = ["EXPIRES", "REUSE_SECONDS", "SAFE_OPTIONS", "UNSAFE_ENV", "SignedReads", "usable_for"]

#: How long a presigned URL stays valid: it is used at once, and 15 minutes is also the clock skew S3
#: accepts for a request signed in its headers, so a presigned request works wherever obstore's does.
EXPIRES = datetime.timedelta(minutes=15)

#: How long a presigned URL is used again for the same key of the same client (well inside
#: :data:`EXPIRES`). Signing costs 12 us warm but 140 us right after a 20 ms wait for an answer, on the
#: way to every request; a cold read's chunk request asks for the key its index request just signed,
#: and a read repeated within minutes asks for the same keys again. A URL whose request is declined is
#: signed afresh the next time (credentials that changed, say).
REUSE_SECONDS = 300.0

#: Presigned URLs by (client, key): ``(url, time.time() when signed)``; cleared when it holds
#: :data:`MAX_URLS`.
_urls: dict[tuple[Hashable, str], tuple[str, float]] = {}
MAX_URLS = 4096

#: obstore's S3 configuration keys (without their optional ``aws_`` prefix) whose effect a presigned URL
#: carries in full (endpoint, region, addressing, requester-pays), or that only change where credentials
#: come from or how objects are written. Any other key (``skip_signature``, ``s3_express``,
#: ``sse_customer_key_base64``, a ``credential_provider``, ``retry_config``, ...) leaves every read to
#: obstore, and so does any client option but ``allow_http``.
SAFE_OPTIONS = frozenset(
    {
        "access_key_id",
        "secret_access_key",
        "session_token",
        "token",
        "bucket",
        "bucket_name",
        "region",
        "default_region",
        "endpoint",
        "endpoint_url",
        "endpoint_url_s3",
        "virtual_hosted_style_request",
        "request_payer",
        "container_credentials_relative_uri",
        "container_credentials_full_uri",
        "container_authorization_token_file",
        "imdsv1_fallback",
        "metadata_endpoint",
        "role_arn",
        "role_session_name",
        "web_identity_token_file",
        "sts_endpoint",
        "checksum_algorithm",
        "conditional_put",
        "copy_if_not_exists",
        "disable_tagging",
        "disable_bulk_delete",
        "unsigned_payload",
        "server_side_encryption",
        "sse_kms_key_id",
        "sse_bucket_key_enabled",
        "client_options",
    }
)

#: obstore's HTTP client options (``client_options``; also read from ``AWS_<NAME>`` environment
#: variables by object_store): only ``allow_http`` leaves a ``GET`` as a presigned URL sends it.
CLIENT_OPTIONS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "default_headers",
        "http1_only",
        "http2_keep_alive_interval",
        "http2_keep_alive_timeout",
        "http2_keep_alive_while_idle",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "root_certificate",
        "randomize_addresses",
        "read_timeout",
        "timeout",
        "user_agent",
    }
)

#: Environment variables object_store reads into an S3 store's configuration that change its ``GET``
#: beyond what a presigned URL carries: any one set leaves every read to obstore. (Other ``AWS_*``
#: variables are credentials, region, endpoint, write settings, or not object_store's at all, such as
#: botocore's ``AWS_CA_BUNDLE``.)
UNSAFE_ENV = frozenset(
    {"AWS_SKIP_SIGNATURE", "AWS_S3_EXPRESS", "AWS_SSE_CUSTOMER_KEY_BASE64"}
    | {f"AWS_{name.upper()}" for name in CLIENT_OPTIONS - {"allow_http"}}
)

#: The header that carries an object's version id (obstore reports it as the answer's ``version``).
VERSION_HEADER = "x-amz-version-id"


def usable_for(url: str, config: Mapping[str, Any], env: Mapping[str, str] | None = None) -> bool:
    """Whether :class:`SignedReads` reads ``url`` (``s3://``) as obstore would, given the store's obstore
    ``config`` and the environment ``env`` (``os.environ`` by default; see the module docstring).

    >>> usable_for("s3://b/a", {"client_options": {"allow_http": True, "timeout": "5s"}}, env={})
    False
    >>> usable_for("s3://b/a", {}, env={"AWS_SSE_CUSTOMER_KEY_BASE64": "..."})
    False
    """
    if url.partition("://")[0].lower() not in ("s3", "s3a"):
        return False
    names = {k.lower().removeprefix("aws_") for k in config}
    if not names <= SAFE_OPTIONS:
        return False
    if any(k.lower() != "allow_http" for k in config.get("client_options") or {}):
        return False
    env = os.environ if env is None else env
    return not any(k.upper() in UNSAFE_ENV for k in env)


class SignedReads(Resting):
    """``GET`` requests of one S3 store's keys through presigned URLs: ``sign(key)`` makes the URL
    (obstore's :func:`obstore.sign` on the store's client), the :class:`HttpReader` of its server sends
    it. ``client`` names the client for the URLs kept for :data:`REUSE_SECONDS` (stores of one client
    share them); without one, the URLs kept are this object's own. Counts (``answered``, ``declined``)
    and rests as a reader does; each reader counts too.

    >>> reads = SignedReads(lambda key: "http://127.0.0.1:1/bucket/" + key + "?X-Amz-Signature=0")
    >>> from altarr.stores.ranges import Range
    >>> reads.get("a/b", Range(0, 4)) is None   # nothing listens there: declined, for obstore
    True
    """

    def __init__(self, sign: Callable[[str], str], client: Hashable | None = None) -> None:
        super().__init__()
        self._sign = sign
        self._client = object() if client is None else client
        #: the reader of each server the presigned URLs point to, or None where it is not used (a proxy)
        self._readers: dict[str, HttpReader | None] = {}

    def _reader(self, origin: str) -> HttpReader | None:
        reader = self._readers.get(origin, False)
        if reader is False:
            usable = http_get.usable_for(origin + "/", {})
            reader = reader_for(origin, VERSION_HEADER)[0] if usable else None
            self._readers[origin] = reader
        return reader  # type: ignore[return-value]

    def _url(self, key: str) -> str:
        """The presigned URL of ``key``: one kept from the last :data:`REUSE_SECONDS`, or a new one."""
        now = time.time()
        kept = _urls.get((self._client, key))
        if kept is not None and 0.0 <= now - kept[1] < REUSE_SECONDS:
            return kept[0]
        url = self._sign(key)
        if len(_urls) >= MAX_URLS:
            _urls.clear()
        _urls[(self._client, key)] = (url, now)
        return url

    def get(self, key: str, req: ByteRequest) -> tuple[bytes, dict[str, Any]] | None:
        """``(bytes, meta)`` of one ``GET`` of ``key``, ``FileNotFoundError`` for a missing key, or
        ``None`` where the request is declined (sent again through obstore)."""
        if self.resting():
            return None
        try:
            url = self._url(key)
        except Exception:  # no credentials, say: obstore's own request reports it
            return self._count(None)
        scheme, sep, rest = url.partition("://")
        host, slash, target = rest.partition("/")
        reader = self._reader(f"{scheme}{sep}{host}") if sep and slash else None
        try:
            got = reader.fetch(slash + target, req) if reader is not None else None
        except FileNotFoundError:
            self._count(True)
            raise
        if got is None:
            _urls.pop((self._client, key), None)  # signed afresh next time
        return self._count(got)
