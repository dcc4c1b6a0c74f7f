"""Folders and files that pysycl writes for itself and later runs or hands to a loader
(the kernel cache holds native code; the OpenCL ICD loader ``dlopen``s what an ICD file
names): trusted only when they are the current user's own.

A folder or file is *private* when the current user owns it and neither group nor
others may write to it. A private folder also keeps what is inside it from being
replaced by anyone else (root aside), so a check of the folder covers its contents
against other local users; contents are still checked as they are read, because a
cache can be copied or restored from elsewhere. Where the system has no POSIX owners
(Windows: no ``os.getuid``) owner and mode are not checked; folders are still created.

>>> import tempfile, os
>>> root = os.path.join(tempfile.mkdtemp(), "cache")
>>> private_dir(root) is None          # created 0700 and checked
True
>>> len(private_secret(os.path.join(root, "secret")))
32
"""
from __future__ import annotations

import logging
import os
import secrets
import stat
import threading
import time

CHECKS_OWNERS = hasattr(os, "getuid")
SECRET_BYTES = 32
_OPEN_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
CACHE_LOG = logging.getLogger("pysycl.cache")

_warned: set[str] = set()
_warned_lock = threading.Lock()


class NotPrivate(Exception):
    """A file or folder that must not be trusted; the message says why."""


def untrusted_reason(st: os.stat_result, what: str) -> str | None:
    """Why the file or folder ``what`` (its ``stat`` result ``st``) is not private, or None.

    >>> import tempfile
    >>> untrusted_reason(os.stat(tempfile.mkdtemp()), "folder") is None
    True
    """
    if not CHECKS_OWNERS:
        return None
    uid = os.getuid()
    if st.st_uid != uid:
        return f"{what} is owned by uid {st.st_uid}, not by the current user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"{what} is writable by group or others (mode "
                f"{stat.S_IMODE(st.st_mode):04o})")
    return None


def private_dir(path: str | os.PathLike, create: bool = True) -> str | None:
    """Create ``path`` with mode 0700 when it is missing (``create``), then check it:
    None when it is a private folder, else why it is not (or why it cannot be made).
    A missing folder that is not to be created gives a reason too.

    >>> import tempfile
    >>> private_dir(os.path.join(tempfile.mkdtemp(), "a", "b")) is None
    True
    """
    path = os.fspath(path)
    try:
        st = os.stat(path)     # one call where the folder is there, as on every cache hit
    except FileNotFoundError:
        if not create:
            return f"{path} does not exist"
        try:
            _make_dirs_0700(path)
            st = os.stat(path)
        except OSError as e:
            return f"cannot create {path} ({e.strerror or e})"
    except OSError as e:
        return f"cannot read {path} ({e.strerror or e})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a folder"
    return untrusted_reason(st, path)


def _make_dirs_0700(path: str) -> None:
    """``os.makedirs`` giving every folder it makes mode 0700 (``makedirs`` gives its
    ``mode`` to the last one only; the umask can only take bits away)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:   # another process made it meanwhile
            if not os.path.isdir(folder):
                raise


def private_secret(path: str | os.PathLike) -> bytes:
    """The per-user secret kept in file ``path``: made when missing (``O_CREAT|O_EXCL``,
    mode 0600, so two processes never both write one), else read and checked (a regular
    file of the current user's that group and others can neither read nor write, of
    ``SECRET_BYTES`` bytes). Raises ``NotPrivate`` with the reason otherwise.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "secret")
    >>> private_secret(path) == private_secret(path)
    True
    """
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
    except FileExistsError:
        return _read_secret(path)
    except OSError as e:
        raise NotPrivate(f"cannot create {path} ({e.strerror or e})") from None
    value = secrets.token_bytes(SECRET_BYTES)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(value)
    except OSError as e:
        raise NotPrivate(f"cannot write {path} ({e.strerror or e})") from None
    return value


def _read_secret(path: str) -> bytes:
    # Another process may have created the file and not yet written its bytes: a short
    # file is read again for a while before it counts as damaged.
    for attempt in range(50):
        try:
            fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
        except OSError as e:
            raise NotPrivate(f"cannot read {path} ({e.strerror or e})") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise NotPrivate(f"{path} is not a regular file")
            reason = untrusted_reason(st, path)
            if reason is None and CHECKS_OWNERS and st.st_mode & 0o077:
                reason = (f"{path} is readable by group or others (mode "
                          f"{stat.S_IMODE(st.st_mode):04o}, not 0600)")
            if reason is not None:
                raise NotPrivate(reason)
            value = fh.read(SECRET_BYTES + 1)
        if len(value) == SECRET_BYTES:
            return value
        if len(value) > SECRET_BYTES or attempt == 49:
            raise NotPrivate(f"{path} holds {len(value)} bytes, not {SECRET_BYTES}")
        time.sleep(0.01)
    raise AssertionError("unreachable")


def warn_once(logger: logging.Logger, message: str) -> None:
    """Log ``message`` as a warning the first time it is seen in this process (a refused
    folder is met on every build; saying so once is enough).

    >>> warn_once(logging.getLogger("pysycl.example"), "said once")
    """
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    logger.warning("%s", message)


def checked_cache_root(root: str | os.PathLike) -> bool:
    """Create the kernel cache root ``root`` (0700) or check it; False, with one warning
    on ``pysycl.cache``, when it is not private, so the caller runs without it.

    >>> import tempfile
    >>> checked_cache_root(tempfile.mkdtemp())
    True
    """
    reason = private_dir(root)
    if reason is None:
        return True
    warn_once(CACHE_LOG, f"not using the kernel cache {os.fspath(root)}: {reason}; running "
                         f"uncached (if the folder is yours, 'chmod go-w' it, or set "
                         f"PYSYCL_CACHE_DIR to a folder only you can write)")
    return False
