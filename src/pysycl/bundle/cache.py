"""The build cache: an in-process memory layer in front of an on-disk store.

Keys are SHA-256 over named parts (canonical IR, target
and options, spec-constant mode and values, property sets, versions, and the digest of
the compiler's own source, ``toolchain.compiler_digest``...). Drivers that compile at
load keep their device code here too (``DeviceCodeCache``: OpenCL program binaries). Each disk
entry carries its full key (the digest of every part) and a SHA-256 of its payload,
and is verified on load: a truncated, corrupted or mismatched entry is ignored with a
warning on ``logging.getLogger("pysycl.cache")`` and the caller rebuilds it. Writes go
to a temporary file in the same directory and are published with ``os.replace``
(atomic on POSIX and Windows), so processes sharing the directory only ever see
complete entries; two processes may build the same entry, and the last rename wins
with identical content.

Entry file: ``b"PYSYCLC1"`` | u32 header length | JSON header | payload. JSON, never
pickle: a cache directory is as untrusted as any other file.

The entries are native code linked into the process, so the cache is used only when it
is the current user's (``detail.private_files``): the root and its folders are created
0700, and a folder or entry owned by another user or writable by group or others is
refused (one warning, then the process runs uncached; a refused entry is rebuilt). A
SHA-256 only detects accidents (whoever rewrites an entry can recompute it), so every
entry also carries an HMAC-SHA-256 under a per-user secret (``secret`` in the root,
mode 0600): a copied, shared or restored cache is checked, not trusted, and an entry
whose HMAC fails is ignored and rebuilt. A secret file that is not private disables
the disk cache, with a warning.

>>> import tempfile
>>> c = Cache(tempfile.mkdtemp())
>>> key = CacheKey({"ir": "module @k {}", "target": "native_cpu"})
>>> c.get_or_build(key, lambda: b"object code")
b'object code'
>>> c.get(key)
b'object code'
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import struct
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Mapping

from .. import config
from ..detail.private_files import (NotPrivate, checked_cache_root, private_dir,
                                    private_secret, untrusted_reason, warn_once)
from ..errors import errc, exception

log = logging.getLogger("pysycl.cache")

_MAGIC = b"PYSYCLC1"
_FORMAT = 1
_MEMORY_ENTRIES = 512  # launchers and images are small; this bounds a long session
SECRET_NAME = "secret"

# Checked once per process: nobody but the user (and root) can change a private folder,
# so one that passed stays private. Entries are checked each time they are read.
_secrets: dict[str, bytes] = {}     # cache root -> its HMAC key, once root and v1 passed
_checked_folders: set[str] = set()  # entry folders that passed
_trust_lock = threading.Lock()


def _digest(value: str | bytes) -> str:
    if isinstance(value, str):
        value = b"s" + value.encode("utf-8")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        value = b"b" + bytes(value)
    else:
        raise exception(errc.invalid, f"cache key parts are str or bytes, got {type(value).__name__}")
    return hashlib.sha256(value).hexdigest()


class CacheKey:
    """A cache key made of named parts; ``hexdigest`` identifies the entry.

    The digest covers part names, order and values, so ``{"a": "x"}`` and
    ``{"b": "x"}`` differ. ``diff`` names the parts that changed:

    >>> old = CacheKey({"ir": "v1", "target": "cpu"})
    >>> old.diff(CacheKey({"ir": "v2", "target": "cpu"}))
    ["part 'ir' changed"]
    """

    __slots__ = ("parts", "hexdigest")

    def __init__(self, parts: Mapping[str, str | bytes]):
        self.parts: dict[str, str] = {str(name): _digest(value) for name, value in parts.items()}
        self.hexdigest = self._combine(self.parts)

    @staticmethod
    def _combine(part_digests: Mapping[str, str]) -> str:
        h = hashlib.sha256(b"pysycl-cache-key-v1\0")
        for name, digest in part_digests.items():
            encoded = name.encode("utf-8")
            h.update(struct.pack("<I", len(encoded)) + encoded + bytes.fromhex(digest))
        return h.hexdigest()

    @classmethod
    def from_part_digests(cls, part_digests: Mapping[str, str]) -> "CacheKey":
        """Rebuild a key from stored part digests (as written in an entry header)."""
        key = cls.__new__(cls)
        key.parts = dict(part_digests)
        key.hexdigest = cls._combine(key.parts)
        return key

    def diff(self, other: "CacheKey") -> list[str]:
        """Human-readable reasons why ``other`` is a different key than ``self``."""
        out = []
        for name, digest in other.parts.items():
            if name not in self.parts:
                out.append(f"part {name!r} added")
            elif self.parts[name] != digest:
                out.append(f"part {name!r} changed")
        out += [f"part {name!r} removed" for name in self.parts if name not in other.parts]
        if not out and list(self.parts) != list(other.parts):
            out.append("parts reordered")
        return out

    def __eq__(self, other):
        return isinstance(other, CacheKey) and self.hexdigest == other.hexdigest

    def __hash__(self):
        return hash(self.hexdigest)

    def __repr__(self):
        return f"CacheKey({self.hexdigest[:16]}…, parts={list(self.parts)})"


class Cache:
    """On-disk + in-memory cache of build products (``bytes``).

    ``directory`` defaults to ``config.cache_dir()``; ``enabled`` to
    ``config.cache_enabled()`` (when disabled nothing touches the disk, but the memory
    layer still spares rebuilding within the process).
    """

    def __init__(self, directory: str | os.PathLike | None = None, enabled: bool | None = None,
                 memory_entries: int = _MEMORY_ENTRIES, suffix: str = ".bin"):
        self._directory = Path(directory) if directory is not None else None
        self._root_str = os.fspath(directory) if directory is not None else ""
        self._suffix = suffix   # ".idx": the warm-start index (warm_index.py) beside the binaries
        self._enabled = enabled
        self._memory: OrderedDict[str, bytes] = OrderedDict()
        self._memory_entries = memory_entries
        self._lock = threading.Lock()          # guards _memory, _key_locks, _last_keys
        self._key_locks: dict[str, list] = {}  # digest -> [lock, users]
        self._last_keys: dict[str, CacheKey] = {}

    @property
    def directory(self) -> Path:
        root = self._directory if self._directory is not None else config.cache_dir()
        return root / f"v{_FORMAT}"

    @property
    def enabled(self) -> bool:
        return config.cache_enabled() if self._enabled is None else self._enabled

    def _root(self) -> str:
        return self._root_str if self._directory is not None else os.fspath(config.cache_dir())

    def _path(self, key: CacheKey, root: str | None = None) -> str:
        """The entry's file: ``directory / hexdigest[:2] / (hexdigest + suffix)`` (a
        string: building it through ``pathlib`` cost more than reading a small entry)."""
        digest = key.hexdigest
        return os.path.join(root or self._root(), f"v{_FORMAT}", digest[:2], digest + self._suffix)

    def _secret(self, root: str) -> bytes | None:
        """The HMAC key of the disk store at ``root``, or None when the root, its ``v1``
        folder or the secret file is not private (warned once): then the process runs
        uncached."""
        secret = _secrets.get(root)
        if secret is not None:
            return secret
        if not checked_cache_root(root) or not _checked_folder(os.path.join(root, f"v{_FORMAT}")):
            return None
        path = os.path.join(root, SECRET_NAME)
        with _trust_lock:
            try:
                secret = _secrets[root] = _secrets.get(root) or private_secret(path)
            except NotPrivate as e:
                warn_once(log, f"not using the kernel cache {root}: its secret {e}; running "
                               f"uncached (remove {path} to make a new one; the cache's "
                               f"entries are then rebuilt)")
                return None
        return secret

    # -- memory layer --
    def _memory_get(self, digest: str) -> bytes | None:
        with self._lock:
            value = self._memory.get(digest)
            if value is not None:
                self._memory.move_to_end(digest)
            return value

    def _memory_put(self, digest: str, value: bytes) -> None:
        with self._lock:
            self._memory[digest] = value
            self._memory.move_to_end(digest)
            while len(self._memory) > self._memory_entries:
                self._memory.popitem(last=False)

    # -- disk layer --
    def _disk_get(self, key: CacheKey) -> bytes | None:
        if not self.enabled:
            return None
        root = self._root()
        secret = self._secret(root)
        if secret is None:
            return None
        path = self._path(key, root)
        try:
            fh = open(path, "rb")
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("cache entry %s unreadable (%s); rebuilding", path, e)
            return None
        with fh:
            if not _checked_folder(os.path.dirname(path), create=False):
                return None
            # The opened file itself is checked, so it cannot be swapped after the check.
            reason = untrusted_reason(os.fstat(fh.fileno()), "the entry")
            try:
                raw = fh.read() if reason is None else b""
            except OSError as e:
                log.warning("cache entry %s unreadable (%s); rebuilding", path, e)
                return None
        payload = None
        if reason is None:
            payload, reason = _decode_entry(raw, key, secret)
        if reason is not None:
            log.warning("ignoring cache entry %s: %s; it will be rebuilt", path, reason)
        return payload

    def _disk_put(self, key: CacheKey, value: bytes, retry: bool = True) -> None:
        if not self.enabled:
            return
        root = self._root()
        path = self._path(key, root)
        folder = os.path.dirname(path)
        if folder not in _checked_folders:
            # A folder this process has not written to yet: the root may have been
            # removed since it was checked, so check it (and read its secret) again.
            with _trust_lock:
                _secrets.pop(root, None)
        secret = self._secret(root)
        if secret is None or not _checked_folder(folder):
            return
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)   # mode 0600
        except FileNotFoundError:
            if retry:   # the folder was removed since it was checked: make it again
                _forget_checks(root)
                self._disk_put(key, value, retry=False)
                return
            log.warning("could not write cache entry %s: its folder is gone", path)
            return
        except OSError as e:  # a read-only or full disk must not fail a build
            log.warning("could not write cache entry %s: %s", path, e)
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_encode_entry(key, value, secret))
            # Replaces a refused entry too: the folder is ours, whoever owned the file.
            os.replace(tmp, path)
        except BaseException as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            if not isinstance(e, OSError):
                raise
            log.warning("could not write cache entry %s: %s", path, e)

    # -- public --
    def get(self, key: CacheKey) -> bytes | None:
        """The cached value or ``None`` (memory first, then disk)."""
        value = self._memory_get(key.hexdigest)
        if value is None:
            value = self._disk_get(key)
            if value is not None:
                self._memory_put(key.hexdigest, value)
        return value

    def contains(self, key: CacheKey) -> bool:
        """Whether ``get(key)`` would likely find a value (in memory, or a file on disk);
        a stat, no read: the file is checked when read."""
        if self._memory_get(key.hexdigest) is not None:
            return True
        return self.enabled and os.path.isfile(self._path(key))

    def put(self, key: CacheKey, value: bytes) -> None:
        """Store ``value`` in memory and (atomically) on disk."""
        if not isinstance(value, (bytes, bytearray)):
            raise exception(errc.invalid, f"cache values are bytes, got {type(value).__name__}")
        value = bytes(value)
        self._memory_put(key.hexdigest, value)
        self._disk_put(key, value)

    def get_or_build(self, key: CacheKey, build_fn: Callable[[], bytes],
                     label: str | None = None) -> bytes:
        """The cached value, or ``build_fn()`` stored and returned.

        Threads asking for one key at once build it once: the first takes the key's
        lock and builds, the others wait and then find the value. ``label`` names the
        thing built (``"kernel mod.conv for native_cpu"``); on a miss the parts that
        changed since the last key seen for that label are logged.
        """
        return self.fetch_or_build(key, build_fn, label)[0]

    def fetch_or_build(self, key: CacheKey, build_fn: Callable[[], bytes],
                       label: str | None = None) -> tuple[bytes, str]:
        """``get_or_build``, and where the value came from: ``"memory"``, ``"disk"``
        or ``"built"`` (the build chain reports its cache tiers)."""
        value = self._memory_get(key.hexdigest)
        if value is not None:
            return value, "memory"
        lock = self._acquire_key_lock(key.hexdigest)
        try:
            with lock:
                value = self._memory_get(key.hexdigest)
                if value is not None:   # another thread built it meanwhile
                    return value, "memory"
                value = self._disk_get(key)
                if value is not None:
                    self._memory_put(key.hexdigest, value)
                    return value, "disk"
                self._log_miss(key, label)
                value = build_fn()
                self.put(key, value)
                return bytes(value), "built"
        finally:
            self._release_key_lock(key.hexdigest)

    def _acquire_key_lock(self, digest: str) -> threading.Lock:
        with self._lock:
            slot = self._key_locks.setdefault(digest, [threading.Lock(), 0])
            slot[1] += 1
            return slot[0]

    def _release_key_lock(self, digest: str) -> None:
        with self._lock:
            slot = self._key_locks[digest]
            slot[1] -= 1
            if slot[1] == 0:  # nobody waits: drop it so the dict stays small
                del self._key_locks[digest]

    def _log_miss(self, key: CacheKey, label: str | None) -> None:
        if label is None:
            log.debug("cache miss for key %s", key.hexdigest[:16])
            return
        with self._lock:
            previous = self._last_keys.get(label)
            self._last_keys[label] = key
        if previous is None:
            log.debug("cache miss for %s: not built before", label)
        else:
            log.info("cache miss for %s: %s", label, ", ".join(previous.diff(key)) or "new key")

    def info(self) -> dict:
        """``{"entries": n, "bytes": total, "path": str}`` of the disk store, and
        ``"untrusted": reason`` when its root exists and is not private (then unused).
        Creates nothing."""
        entries = total = 0
        root = self.directory
        out = {}
        if os.path.isdir(self._root()):
            reason = private_dir(self._root(), create=False)
            if reason is not None:
                out["untrusted"] = reason
        if root.is_dir():
            for path in root.glob(f"*/*{self._suffix}"):
                try:
                    total += path.stat().st_size
                    entries += 1
                except OSError:  # removed by another process meanwhile
                    pass
        return {"entries": entries, "bytes": total, "path": str(root), **out}

    def clear(self) -> int:
        """Remove every entry (and stray temporary files); returns entries removed."""
        with self._lock:
            self._memory.clear()
            self._last_keys.clear()
        removed = 0
        root = self.directory
        _forget_checks(self._root())
        if root.is_dir():
            for path in list(root.glob("*/*")):
                if path.suffix == self._suffix or path.name.startswith(".tmp-"):
                    try:
                        path.unlink()
                        removed += path.suffix == self._suffix
                    except OSError:
                        pass
            for sub in root.iterdir():
                try:
                    sub.rmdir()  # only succeeds when empty
                except OSError:
                    pass
        return removed


def _checked_folder(folder: str, create: bool = True) -> bool:
    """Whether the cache folder ``folder`` is private (made 0700 if ``create`` and
    missing); a refusal is warned once."""
    if folder in _checked_folders:
        return True
    reason = private_dir(folder, create)
    if reason is None:
        with _trust_lock:
            _checked_folders.add(folder)
        return True
    if create or os.path.isdir(folder):   # a missing folder holds no entry to refuse
        warn_once(log, f"not using cache folder {folder}: {reason}")
    return False


def _forget_checks(root: str) -> None:
    """Once folders under ``root`` were removed (``clear``, or by hand while running),
    they are made and checked again, and the secret read again."""
    with _trust_lock:
        _secrets.pop(root, None)
        _checked_folders.difference_update(
            [f for f in _checked_folders if f.startswith(root + os.sep)])


def _entry_hmac(secret: bytes, key_digest: str, size: int, checksum: str) -> str:
    """The entry's HMAC-SHA-256: over its key, size and payload SHA-256 (which is
    recomputed from the payload on load), so it covers the payload without a second
    pass over it."""
    message = f"pysycl-cache-entry-v{_FORMAT}\0{key_digest}\0{size}\0{checksum}"
    return hmac.new(secret, message.encode("utf-8"), hashlib.sha256).hexdigest()


def _encode_entry(key: CacheKey, payload: bytes, secret: bytes) -> bytes:
    checksum = hashlib.sha256(payload).hexdigest()
    header = json.dumps({
        "format": _FORMAT,
        "key": key.hexdigest,
        "parts": key.parts,
        "size": len(payload),
        "sha256": checksum,
        "hmac": _entry_hmac(secret, key.hexdigest, len(payload), checksum),
    }, sort_keys=True).encode("utf-8")
    return _MAGIC + struct.pack("<I", len(header)) + header + payload


def _decode_entry(raw: bytes, key: CacheKey, secret: bytes) -> tuple[bytes | None, str | None]:
    """``(payload, None)`` if ``raw`` is a valid entry for ``key`` written under
    ``secret``, else ``(None, reason)``."""
    if len(raw) < len(_MAGIC) + 4 or raw[:len(_MAGIC)] != _MAGIC:
        return None, "not a pysycl cache entry (bad magic or truncated)"
    (hlen,) = struct.unpack_from("<I", raw, len(_MAGIC))
    start = len(_MAGIC) + 4
    if hlen > len(raw) - start:
        return None, "truncated header"
    try:
        header = json.loads(raw[start:start + hlen].decode("utf-8"))
        stored_parts = header["parts"]
        size, checksum, stored_key = header["size"], header["sha256"], header["key"]
        if not isinstance(stored_parts, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in stored_parts.items()):
            raise TypeError("parts")
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        return None, "unreadable header"
    if header.get("format") != _FORMAT:
        return None, f"format {header.get('format')!r} is not {_FORMAT}"
    if stored_key != key.hexdigest or stored_parts != key.parts:
        try:
            changes = CacheKey.from_part_digests(stored_parts).diff(key)
        except ValueError:
            changes = []
        return None, "key mismatch (" + (", ".join(changes) or "digest differs") + ")"
    payload = raw[start + hlen:]
    if len(payload) != size:
        return None, f"truncated payload ({len(payload)} of {size} bytes)"
    if hashlib.sha256(payload).hexdigest() != checksum:
        return None, "payload checksum mismatch"
    expected = _entry_hmac(secret, stored_key, size, checksum)
    if not hmac.compare_digest(str(header.get("hmac")).encode("utf-8"), expected.encode("utf-8")):
        return None, ("HMAC mismatch (not written by this user's pysycl under this cache's "
                      "secret, or altered since)")
    return payload, None


_default: Cache | None = None
_index: Cache | None = None
_tuning: Cache | None = None
_default_lock = threading.Lock()


def default_cache() -> Cache:
    """The process-wide cache (directory and switch read from ``config`` on each use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Cache()
        return _default


def tuning_cache() -> Cache:
    """Autotuning choices (``runtime/tuning.py``): entries in the same directory, named
    ``*.tune``, verified and written like the binaries."""
    global _tuning
    with _default_lock:
        if _tuning is None:
            _tuning = Cache(suffix=".tune")
        return _tuning


def index_cache() -> Cache:
    """The warm-start source index (``warm_index.py``): entries in the same directory,
    named ``*.idx``, verified and written like the binaries."""
    global _index
    with _default_lock:
        if _index is None:
            _index = Cache(suffix=".idx")
        return _index


class DeviceCodeCache:
    """What a driver keeps of its own compilation of an image it loads (an OpenCL
    program's device binary: a driver's build of SPIR-V, hundreds of milliseconds in a
    fresh process, is the longest step of a disk-cache hit; DPC++'s persistent device
    code cache and pyopencl's binary cache do the same). The driver names its key parts
    (what its build depends on); entries live in the default cache, verified and
    written like the binaries, under pysycl's version and compiler digest too."""

    def __init__(self, cache: Cache):
        self._cache = cache

    def _key(self, parts: Mapping[str, str | bytes]) -> CacheKey:
        from . import toolchain
        return CacheKey({"kind": "device code", **parts,
                         "pysycl": toolchain.pysycl_version(),
                         "compiler": toolchain.compiler_digest()})

    def get(self, parts: Mapping[str, str | bytes]) -> bytes | None:
        return self._cache.get(self._key(parts))

    def put(self, parts: Mapping[str, str | bytes], data: bytes) -> None:
        self._cache.put(self._key(parts), data)


def device_code_cache() -> DeviceCodeCache | None:
    """The device code cache, or None when caching is off (``PYSYCL_CACHE=0``)."""
    cache = default_cache()
    return DeviceCodeCache(cache) if cache.enabled else None


def cache_info() -> dict:
    """``pysycl cache info``: entries, bytes and path of the default cache."""
    return default_cache().info()


def cache_clear() -> int:
    """``pysycl cache clear``: empty the default cache (and the warm-start index and
    the autotuning choices); returns entries removed."""
    index_cache().clear()
    tuning_cache().clear()
    return default_cache().clear()
