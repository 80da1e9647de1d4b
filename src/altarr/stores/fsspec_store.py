"""A store over any fsspec file system, through fsspec's public API only: every URL whose scheme has
no client of its own in altarr (``memory://``, chained ``a::b`` URLs, ``sftp://``, ...). A batch of
ranges is one ``fs.cat_ranges`` call; ``file://`` writes go through a :class:`~altarr.stores.LocalStore`
(``"locked"``), every other file system is ``"single-writer"`` (``docs/remote.md``). Its HTTP file
system asks for the bytes as stored and reads a ``200`` answer to a ranged ``GET`` only within a bound.
"""

from __future__ import annotations

import asyncio
import builtins
import datetime
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.cached import CachingFileSystem

from ..errors import StoreError
from ._util import NETWORK_COALESCE_GAP, as_bytes, client_failure, coalesce_gap_for
from .base import Fetched, ReadRequest, Store, normalize_key
from .coalesce import DEFAULT_MAX_COALESCED_SIZE
from .ranges import ByteRequest, Range, Whole, legacy_bounds

if TYPE_CHECKING:
    from .local import LocalStore

__all__ = ["FsspecStore", "RANGE_IGNORED_MARGIN"]

#: Info fields that identify an object version, best first.
_VERSION_FIELDS = ("ETag", "etag", "generation", "md5Hash")
#: Info fields that tell when an object was written, best first. A time names no version alone: two
#: writes within one tick of the clock share it (local files: a few ms, seen under a fast writer), so the
#: token joins it to the size and inode (a file replaced by rename has a new one: LocalStore's token).
_TIME_FIELDS = ("mtime", "LastModified", "last_modified", "modified", "created")


#: Protocols whose requests ask for the bytes as stored and inflate nothing (aiohttp inflates whole
#: bodies by default: 1 MB of answer became 2 GB)
HTTP_PROTOCOLS = frozenset({"http", "https"})


#: How much longer than the range asked a ``200`` answer to a ranged ``GET`` may be and still be read
RANGE_IGNORED_MARGIN = NETWORK_COALESCE_GAP


def _extra_bytes(asked: str, length: int | None) -> int | None:
    """How many bytes longer than the ``Range`` header ``asked`` a whole answer of ``length`` bytes is;
    ``None`` where unknown or the range could not be cut out of it (from an offset to the end)."""
    first, sep, last = asked.strip().removeprefix("bytes=").partition("-")
    if length is None or not sep or not (first + last).isdigit():
        return None
    if not first:  # a suffix
        return max(length - int(last), 0)
    if not last:  # from an offset to the end: the whole object only from offset 0
        return 0 if int(first) == 0 else None
    return max(length - (int(last) + 1 - int(first)), 0)


async def bounded_answer(response: Any) -> None:
    """aiohttp's ``raise_for_status`` hook: refuse, before its body is read, a ``200`` to a ranged ``GET``
    longer than the range by more than :data:`RANGE_IGNORED_MARGIN` (or of unannounced length)."""
    asked = response.request_info.headers.get("Range")
    if response.status != 200 or not asked:
        return
    extra = _extra_bytes(asked, response.content_length)
    if extra is not None and extra <= RANGE_IGNORED_MARGIN:
        return
    response.close()
    length = (
        "of unannounced length" if response.content_length is None else f"of {response.content_length} bytes"
    )
    raise StoreError(
        f"{response.url} answered the ranged GET {asked!r} with the whole object ({length}): the "
        "server ignores Range; refused before reading its body"
    )


def identity_headers(headers: Any) -> dict[str, Any]:
    return {**dict(headers or {}), "Accept-Encoding": "identity"}


def identity_options(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` for ``url_to_fs(url, **options)`` with every HTTP file system of ``url`` (chained ones
    under their protocol's name) asking for identity and inflating nothing."""
    out = dict(options)
    for i, bit in enumerate(url.split("::")):
        protocol = fsspec.core.split_protocol(bit)[0]
        if protocol not in HTTP_PROTOCOLS:
            continue
        target = out if i == 0 else dict(out.get(protocol) or {})
        target["headers"] = identity_headers(target.get("headers"))
        target["client_kwargs"] = {**dict(target.get("client_kwargs") or {}), "auto_decompress": False}
        if i:
            out[protocol] = target
    return out


def _token(value: Any) -> float | int | str:
    if isinstance(value, datetime.datetime):
        return value.timestamp()
    if isinstance(value, int | float | str):
        return value
    return str(value)


def _read_opened(fs: fsspec.AbstractFileSystem, path: str, start: int | None, end: int | None) -> bytes:
    """``fs.cat_file`` through an opened file, for fsspec's caches: their ``cat_ranges`` reads nothing not
    cached yet (fsspec 2025.7-2026.8) or fails the batch on one absent object (2026.9), and their
    ``cat_file`` fails a suffix range (fsspec PR 2101). One object after the other, each kept in the cache."""
    with fs.open(path, "rb") as f:
        f.seek(start or 0, 2 if start is not None and start < 0 else 0)
        data: bytes = f.read(-1 if end is None else end - f.tell())
        return data


class FsspecStore(Store):
    """A store rooted at an fsspec URL (or a file system instance plus ``path``); ``storage_options`` go
    to the file system. Tuning: ``coalesce_gap``, ``max_coalesced_size``, ``batch_size`` (concurrent
    requests on async file systems).

    >>> s = FsspecStore("memory://altarr-doc-class")
    >>> s.set("x", b"abc"); s.size("x"), s.exists("y")
    (3, False)
    """

    def __init__(
        self,
        url_or_fs: str | fsspec.AbstractFileSystem,
        path: str | None = None,
        read_only: bool = False,
        *,
        coalesce_gap: int | None = None,
        max_coalesced_size: int = DEFAULT_MAX_COALESCED_SIZE,
        batch_size: int | None = None,
        durable: bool = False,
        **storage_options: Any,
    ) -> None:
        super().__init__()
        if isinstance(url_or_fs, str):
            fs, root = url_to_fs(url_or_fs, **identity_options(url_or_fs, storage_options))
            self.url: str | None = url_or_fs
            if path:
                root = f"{root.rstrip('/')}/{normalize_key(path)}"
        elif isinstance(url_or_fs, fsspec.AbstractFileSystem):
            if storage_options:
                raise TypeError("storage options are only accepted with a URL, not a file system instance")
            fs = url_or_fs
            root = fs._strip_protocol(path) if path else ""
            self.url = fs.unstrip_protocol(root) if root else None
        else:
            raise TypeError(f"expected an fsspec URL or file system, got {type(url_or_fs).__name__}")
        self.fs = fs
        self.read_only = bool(read_only)
        protocols = {fs.protocol} if isinstance(fs.protocol, str) else set(fs.protocol)
        self.coalesce_gap = coalesce_gap_for(protocols) if coalesce_gap is None else coalesce_gap
        self.max_coalesced_size = max_coalesced_size
        self.batch_size = batch_size
        self._read_options: dict[str, Any] = {}
        if protocols & HTTP_PROTOCOLS:
            headers = identity_headers(getattr(fs, "kwargs", {}).get("headers"))
            self._read_options = {
                "headers": headers,
                "auto_decompress": False,
                "raise_for_status": bounded_answer,
            }
        self._root = root.rstrip("/") if root != "/" else ""
        self._root_sep = self._root + "/" if self._root else ""
        self.durable = bool(durable)
        self._local: LocalStore | None = None
        if protocols & {"file", "local"}:  # local files are written through a LocalStore
            from .local import LocalStore

            self._local = LocalStore(self._root or "/", read_only=self.read_only, durable=self.durable)
            self._local.stats = self.stats
            self.concurrent_writes = self._local.concurrent_writes

    @property
    def identity(self) -> object:
        return ("fsspec", type(self.fs).__name__, id(self.fs), self._root)

    def __repr__(self) -> str:
        ro = ", read_only=True" if self.read_only else ""
        where = self.url or f"{type(self.fs).__name__}:{self._root}"
        return f"FsspecStore({where!r}{ro})"

    def __reduce__(self) -> tuple[Callable[..., FsspecStore], tuple[object, ...]]:
        options: dict[str, Any] = {
            "coalesce_gap": self.coalesce_gap,
            "max_coalesced_size": self.max_coalesced_size,
        }
        factory = partial(FsspecStore, batch_size=self.batch_size, durable=self.durable, **options)
        return factory, (self.fs, self._root, self.read_only)

    # --- paths ----------------------------------------------------------------------------------------
    def _path(self, key: str) -> str:
        if not key:
            return self._root
        return self._root_sep + key

    def _key(self, path: str) -> str | None:
        """The key of an fsspec path under the root, or ``None`` if it is not below it."""
        path = self.fs._strip_protocol(path).rstrip("/")
        if self._root_sep:
            return path[len(self._root_sep) :] if path.startswith(self._root_sep) else None
        return path.lstrip("/")

    def _gather(self, name: str | Callable[..., Any], calls: Sequence[tuple]) -> list[Any]:
        """The file system's method ``name`` (or a function) on each argument tuple, concurrently (its
        ``_name``) on an async file system; exceptions are returned."""
        if callable(name) or not self.fs.async_impl:
            call, out = name if callable(name) else getattr(self.fs, name), []
            for args in calls:
                try:
                    out.append(call(*args))
                except Exception as e:
                    out.append(e)
            return out
        from fsspec.asyn import sync

        fn = getattr(self.fs, f"_{name}")
        limit = self.batch_size or getattr(self.fs, "batch_size", None) or 128

        async def runner() -> list[Any]:
            sem = asyncio.Semaphore(limit)

            async def one(args: tuple) -> Any:
                async with sem:
                    return await fn(*args)

            return await asyncio.gather(*map(one, calls), return_exceptions=True)

        got: list[Any] = sync(self.fs.loop, runner)
        return got

    def _infos(self, paths: Sequence[str]) -> list[Any]:
        self.stats.add(rounds=1)
        for p in paths:
            self.fs.invalidate_cache(p)
        return self._gather("info", [(p,) for p in paths])

    # --- reads ----------------------------------------------------------------------------------------
    def _fetch(self, merged: list[ReadRequest], versioned: bool) -> Fetched:
        """One ``fs.cat_ranges`` call; an empty range is a size query instead (a server answers an empty
        ``Range`` with the whole object), and the sizes it learns are reported."""
        results: list[bytes | None] = [None] * len(merged)
        sizes: list[int | None] = [None] * len(merged)
        empty = [m for m, (_, req) in enumerate(merged) if type(req) is Range and req.stop <= req.start]
        infos = self._infos([self._path(merged[m][0]) for m in empty]) if empty else []
        for m, info in zip(empty, infos, strict=True):
            sizes[m] = self._size_from_info(info, merged[m][0])
            results[m] = None if sizes[m] is None else b""
        todo = sorted(set(range(len(merged))) - set(empty))
        if todo:
            self._cat(merged, todo, results)
        return Fetched(results, sizes=sizes)

    def _cat(self, merged: list[ReadRequest], todo: list[int], results: list) -> None:
        """The requests ``todo`` in one ``cat_ranges`` call into ``results``."""
        paths = [self._path(merged[m][0]) for m in todo]
        starts, ends = map(list, zip(*(self._cat_bounds(merged[m][1]) for m in todo), strict=True))
        try:
            if isinstance(self.fs, CachingFileSystem):  # fsspec's caches: see _read_opened
                out = self._gather(
                    partial(_read_opened, self.fs), list(zip(paths, starts, ends, strict=True))
                )
            else:
                out = self.fs.cat_ranges(paths, starts, ends, on_error="return", **self._read_options)
        except Exception as e:  # a failure of the whole batch (e.g. unreachable endpoint)
            raise client_failure("batched read", merged[todo[0]][0], e) from e
        self.stats.add(rounds=1)
        failed = []
        for m, start, end, r in zip(todo, starts, ends, out, strict=True):
            if isinstance(r, FileNotFoundError):
                results[m] = None
            elif isinstance(r, BaseException):
                failed.append((m, r))
            else:
                results[m] = self._cut(r, start, end)
        if failed:
            self._past_the_end(merged, failed, results)

    def _past_the_end(self, merged: list[ReadRequest], failed: list[tuple[int, Any]], results: list) -> None:
        """Failed ranged reads: empty where the object's size shows the range lies past its end, else a
        ``StoreError``."""
        infos = self._infos([self._path(merged[m][0]) for m, _ in failed])
        self.stats.add(size_queries=len(failed))
        for (m, err), info in zip(failed, infos, strict=True):
            key, req = merged[m]
            size = None if isinstance(info, BaseException) else self._size_from_info(info, key)
            off, end = (0, 1) if size is None else req.bounds(size)
            if end > off:
                raise client_failure("read", key, err, legacy_bounds(req)) from err
            results[m] = b""

    def _cat_bounds(self, req: ByteRequest) -> tuple[int | None, int | None]:
        if type(req) is not Whole:
            return legacy_bounds(req)
        # "bytes=0-": s3fs sends a HEAD before an unranged GET
        return (0 if self.fs.async_impl else None), None

    @staticmethod
    def _cut(r: Any, start: int | None, end: int | None) -> bytes:
        """One ``cat_ranges`` answer, the range cut out where a server ignored ``Range``."""
        data = as_bytes(r)
        if start is not None and start >= 0 and end is not None and len(data) > end - start:
            data = data[start:end]
        elif start is not None and start < 0 and len(data) > -start:
            data = data[start:]
        return data

    def _size_from_info(self, info: Any, key: str) -> int | None:
        if isinstance(info, BaseException):
            if isinstance(info, FileNotFoundError):
                return None
            raise client_failure("size query", key, info) from info
        if info.get("type", "file") != "file":
            return None
        return int(info["size"])

    def stat(self, key: str) -> tuple[int, float | int | str] | None:
        key = normalize_key(key)
        self.stats.add(size_queries=1)
        info = self._infos([self._path(key)])[0]
        size = self._size_from_info(info, key)
        if size is None:
            return None
        version = next((info[n] for n in _VERSION_FIELDS if info.get(n) is not None), None)
        if version is not None:
            return size, _token(version)
        written = next((_token(info[n]) for n in _TIME_FIELDS if info.get(n) is not None), None)
        return size, f"{written}:{info.get('ino')}:{size}"

    # --- writes ---------------------------------------------------------------------------------------
    def set(self, key: str, value: bytes | bytearray | memoryview) -> None:
        self.set_many([(key, value)])

    def set_many(self, items: Sequence[tuple[str, bytes | bytearray | memoryview]]) -> None:
        if not items:
            return
        keys = [self._check_key_for_write(k, "write") for k, _ in items]
        if self._local is not None:
            self._local.set_many(items)
            return
        data = [as_bytes(v) for _, v in items]
        out = self._gather("pipe_file", [(self._path(k), d) for k, d in zip(keys, data, strict=True)])
        ok = [i for i, r in enumerate(out) if not isinstance(r, BaseException)]
        self.stats.add(writes=len(ok), bytes_written=sum(len(data[i]) for i in ok))
        for k, r in zip(keys, out, strict=True):
            if isinstance(r, BaseException):
                raise client_failure("write", k, r) from r

    @contextmanager
    def exclusive(self, keys: Iterable[str]) -> Iterator[None]:
        """Local files hold cross-process locks; other file systems do nothing (``"single-writer"``).

        >>> s = FsspecStore("memory://altarr-doc-exclusive")
        >>> with s.exclusive(["k"]):
        ...     s.set("k", b"1")
        >>> s.concurrent_writes
        'single-writer'
        """
        with nullcontext() if self._local is None else self._local.exclusive(keys):
            yield

    def list_temporary(self, prefix: str = "") -> list[str]:
        return [] if self._local is None else self._local.list_temporary(prefix)

    def remove_temporary(self, keys: Iterable[str]) -> list[str]:
        return [] if self._local is None else self._local.remove_temporary(keys)

    def delete(self, key: str) -> bool:
        return self.delete_many([key])[0]

    def delete_many(self, keys: Sequence[str]) -> list[bool]:
        if not keys:
            return []
        keys = [self._check_key_for_write(k, "delete") for k in keys]
        if self._local is not None:
            return self._local.delete_many(keys)
        infos = self._infos([self._path(k) for k in keys])
        self.stats.add(size_queries=len(keys))
        existed = [self._size_from_info(info, k) is not None for k, info in zip(keys, infos, strict=True)]
        removed = self._remove([k for k, e in zip(keys, existed, strict=True) if e])
        return [k in removed for k in keys]

    def delete_prefix(self, prefix: str) -> int:
        """The keys of one listing, removed with no size query each (the listing says they exist)."""
        if self._local is not None:
            return self._local.delete_prefix(prefix)
        self._require_writable(prefix, "delete")
        return len(self._remove(list(self.list(prefix))))

    def _remove(self, keys: builtins.list[str]) -> builtins.set[str]:
        """``rm_file`` on each of ``keys`` (concurrently on an async file system): the keys removed."""
        out = self._gather("rm_file", [(self._path(k),) for k in keys])
        self.stats.add(deletes=len(keys))
        for k, r in zip(keys, out, strict=True):
            if isinstance(r, BaseException) and not isinstance(r, FileNotFoundError):
                raise client_failure("delete", k, r) from r
        return {k for k, r in zip(keys, out, strict=True) if not isinstance(r, BaseException)}

    # --- listing --------------------------------------------------------------------------------------
    def _listing(self, prefix: str, call: Callable[[str], Any]) -> tuple[str, Any]:
        """``call`` on the folder ``prefix``'s path, its listing cache dropped (``[]``: missing)."""
        prefix = normalize_key(prefix)
        base = self._path(prefix)
        self.stats.add(lists=1)
        self.fs.invalidate_cache(base)
        try:
            return prefix, call(base)
        except (FileNotFoundError, NotADirectoryError):
            return prefix, []
        except Exception as e:
            raise client_failure("listing", prefix or None, e) from e

    def list(self, prefix: str = "") -> Iterator[str]:
        if self._local is not None:  # skips temporary and lock files
            return self._local.list(prefix)
        return (key for key, _ in self.list_sized(prefix))

    def list_sized(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        if self._local is not None:
            return self._local.list_sized(prefix)
        prefix, found = self._listing(prefix, lambda base: self.fs.find(base, detail=True))
        pre = prefix + "/" if prefix else ""
        sized = [(self._key(path), info["size"]) for path, info in dict(found).items()]
        return iter(sorted((k, int(n)) for k, n in sized if k and k.startswith(pre) and k != prefix))

    def list_dir(self, prefix: str = "") -> tuple[builtins.list[str], builtins.list[str]]:
        if self._local is not None:
            return self._local.list_dir(prefix)
        prefix, entries = self._listing(prefix, lambda base: self.fs.ls(base, detail=True))
        pre = prefix + "/" if prefix else ""
        keys: list[str] = []
        dirs: list[str] = []
        for entry in entries:
            k = self._key(entry["name"]) or ""
            name = k[len(pre) :] if k.startswith(pre) else ""  # "": the folder, or a file named like it
            if name and "/" not in name:
                (dirs if entry.get("type") == "directory" else keys).append(name)
        return sorted(set(keys)), sorted(set(dirs))
