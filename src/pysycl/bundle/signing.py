"""Which binaries of a bundle file pysycl runs as they are: those it can tell it wrote.

A file's ``PYSYCL/integrity`` checksum only finds accidents: anyone can recompute it.
The machine code of a native image cannot be checked for what it will do, so each
image pysycl writes carries ``PYSYCL/signature`` ``hmac_sha256``: an HMAC-SHA256,
under a secret key of the user who wrote it, over everything the image holds (its
property sets, IR modules and native images, each length-prefixed). Loading the file
again as that user verifies it, and the image's binaries are used as they are (an
ahead-of-time file does no code generation). A file that does not verify (another
user's, another machine's, or changed since) is rebuilt from its pysycl IR, so its
binaries are never run; one without pysycl IR is refused, unless the user says the
file's code is trusted (``PYSYCL_TRUST_BUNDLE_CODE=1``: DPC++'s rule, which runs a
file's native code as it is). docs/bundle-files.md tells the whole rule.

The key is 32 random bytes in ``bundle-signing.key`` of ``config.key_dir()``
(``~/.config/pysycl``), made on first use, mode 0600 in a 0700 folder; a key file or
folder that another user owns or others can write is not used (nothing is trusted
then).

>>> from pysycl.bundle.syclbin import AbstractModule
>>> len(image_digest(AbstractModule()))
32
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import struct
import threading

from .. import config
from .property_sets import PropertySetRegistry

SIGNATURE_SET = "PYSYCL/signature"
SIGNATURE_KEY = "hmac_sha256"
KEY_FILE = "bundle-signing.key"
_DOMAIN = b"pysycl bundle image signature 1\0"
_KEY_BYTES = 32

log = logging.getLogger("pysycl.bundle")
_lock = threading.Lock()
_keys: dict[str, bytes | None] = {}


def _field(out: list, data: bytes) -> None:
    out.append(struct.pack("<Q", len(data)))
    out.append(data)


def image_digest(am) -> bytes:
    """SHA-256 over an abstract module's content: its property sets but the signature
    set, then each IR module and native image, every field length-prefixed."""
    sets = {k: v for k, v in am.property_sets.items() if k != SIGNATURE_SET}
    parts: list[bytes] = [_DOMAIN]
    _field(parts, PropertySetRegistry(sets).to_text().encode("utf-8"))
    for ir in am.ir_modules:
        _field(parts, b"ir")
        _field(parts, struct.pack("<Q", ir.ir_type))
        _field(parts, (ir.target or "").encode("utf-8"))
        _field(parts, bytes(ir.data))
    for n in am.native_images:
        _field(parts, b"native")
        for text in (n.target, n.arch, n.format):
            _field(parts, (text or "").encode("utf-8"))
        _field(parts, bytes(n.data))
    return hashlib.sha256(b"".join(parts)).digest()


def sign(am) -> None:
    """Add the ``PYSYCL/signature`` set to abstract module ``am`` (nothing when this
    user has no usable key)."""
    key = user_key()
    if key is None:
        return
    mac = hmac.new(key, image_digest(am), hashlib.sha256).digest()
    am.property_sets.add_set(SIGNATURE_SET, {SIGNATURE_KEY: mac})


def verify(am) -> bool:
    """True if ``am`` carries a signature this user's key made over its content."""
    sig = (am.property_sets.get(SIGNATURE_SET) or {}).get(SIGNATURE_KEY)
    if not isinstance(sig, bytes) or len(sig) != hashlib.sha256().digest_size:
        return False
    key = user_key()
    if key is None:
        return False
    mac = hmac.new(key, image_digest(am), hashlib.sha256).digest()
    return hmac.compare_digest(mac, sig)


def user_key() -> bytes | None:
    """This user's signing key (made on first use), or None when there is no private
    place for it."""
    root = str(config.key_dir())
    with _lock:
        if root not in _keys:
            _keys[root] = _load_or_make_key(root)
        return _keys[root]


def _private_dir(path: str) -> bool:
    st = os.stat(path, follow_symlinks=False)
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _load_or_make_key(root: str) -> bytes | None:
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        if not _private_dir(root):
            log.warning("bundle files: %s is not a private folder of this user; no "
                        "file's binaries are trusted", root)
            return None
        path = os.path.join(root, KEY_FILE)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return _read_key(path)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(_KEY_BYTES))
        return _read_key(path)
    except OSError as e:
        log.warning("bundle files: no signing key (%s); no file's binaries are trusted", e)
        return None


def _read_key(path: str) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            log.warning("bundle files: %s is not a private file of this user; no file's "
                        "binaries are trusted", path)
            return None
        key = fh.read(_KEY_BYTES + 1)
    return key if len(key) == _KEY_BYTES else None
