"""The job's secret and what it signs: only the launch's own processes may join its rendezvous.

Every value a rank writes to the rendezvous store, every announcement on a derived port and
every rank's gathered bytes carry an HMAC-SHA256 under a key derived from a secret that only
the launch's processes hold. A rank acts on no value whose MAC does not verify.

Where the secret comes from, first match wins:

ENVCHECK_JOB_SECRET   an environment variable the launch hands every task (at least 32
                      characters; the sbatch script of `envcheck slurm script --job` exports a
                      fresh one; export one before torchrun/mpirun/horovodrun on every host).
                      Environment variables are readable only by the job's uid (and root).
a secret file         otherwise: rank 0 writes a fresh random secret, mode 0600, into
                      ENVCHECK_JOB_SECRET_DIR (default ~/.cache/envcheck/job-secrets, made
                      0700), named for the launch; the other ranks read it there. That works
                      where every rank shares that directory: one host, or a home directory on
                      shared storage. Rank 0 removes it when the job ends.

The launchers' own ids (TORCHELASTIC_RUN_ID, SLURM_JOB_ID.STEP, Open MPI's job id) are not
secrets: anyone on the network can guess them. They only name the secret file.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envcheck.errors import BadInput
from envcheck.inputs import open_input, system_tree

SECRET_ENV = "ENVCHECK_JOB_SECRET"
SECRET_DIR_ENV = "ENVCHECK_JOB_SECRET_DIR"
MIN_SECRET = 32  # characters of ENVCHECK_JOB_SECRET
MAC_HEX = 64  # hex digits of an HMAC-SHA256
MAX_VALUE = 64 << 10  # bytes of one signed store value
MAX_DEPTH = 32  # nesting of one JSON value


class AuthError(Exception):
    """No usable secret, or a value whose signature does not verify: the message says which."""


@dataclass(frozen=True)
class Secret:
    key: bytes  # the signing key (derived from the secret, never the secret itself)
    source: str  # "ENVCHECK_JOB_SECRET", or the secret file's path
    path: str = ""  # the secret file rank 0 wrote ("" when the secret came from the env)


def _derive(raw: bytes) -> bytes:
    return hmac.new(raw, b"envcheck verify job/1", hashlib.sha256).digest()


def secret_dir(env: Mapping[str, str]) -> Path:
    given = env.get(SECRET_DIR_ENV, "").strip()
    if given:
        return Path(given)
    return home(env) / ".cache/envcheck/job-secrets"


def home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def secret_path(env: Mapping[str, str], launch_id: str) -> Path:
    """The secret file of the launch named `launch_id` (a file name of hex digits)."""
    return secret_dir(env) / (hashlib.sha256(launch_id.encode()).hexdigest()[:32] + ".key")


def from_env(env: Mapping[str, str]) -> Secret | None:
    """The secret the launch exported (None when it exported none); BadInput when it is not
    UTF-8 text of at least MIN_SECRET characters."""
    text = env.get(SECRET_ENV)
    if text is None:
        return None
    try:
        raw = text.strip().encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 (os.environ's surrogate escapes)
        raise BadInput(f"{SECRET_ENV} is not UTF-8 text: export a random one, e.g. "
                       "$(openssl rand -hex 32)") from None
    if len(text.strip()) < MIN_SECRET:
        raise BadInput(f"{SECRET_ENV} is set but shorter than {MIN_SECRET} characters: "
                       "export a random one, e.g. $(openssl rand -hex 32)")
    return Secret(_derive(raw), SECRET_ENV)


def _private_dir(env: Mapping[str, str], path: Path) -> None:
    """Make `path` (0700) or check it: a directory of this uid that nobody else can enter.
    A missing $HOME is never made: BadInput."""
    if not env.get(SECRET_DIR_ENV, "").strip() and not home(env).is_dir():
        raise BadInput(f"$HOME ({home(env)}) is not a directory, and the job's secret file "
                       f"goes under it: export {SECRET_ENV}, or set {SECRET_DIR_ENV}")
    tree = system_tree(path)
    if tree:  # the other ranks' open_input would refuse the file: refuse it here first
        raise BadInput(f"the secret directory {path} is under {tree}, where no input is read: "
                       f"set {SECRET_DIR_ENV} elsewhere, or export {SECRET_ENV}")
    try:
        with contextlib.suppress(FileExistsError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir(mode=0o700)
    except OSError as e:
        raise BadInput(f"cannot make the secret directory {path}: {e.strerror}; export "
                       f"{SECRET_ENV}, or set {SECRET_DIR_ENV}") from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise AuthError(f"secret directory {path} must be a directory of uid {os.geteuid()} "
                        f"with mode 0700 (it is uid {st.st_uid}, mode "
                        f"{stat.S_IMODE(st.st_mode):04o}); or export {SECRET_ENV}")


def create_file(env: Mapping[str, str], launch_id: str) -> Secret:
    """Rank 0: a fresh secret in the launch's secret file, mode 0600 (an old one replaced)."""
    path = secret_path(env, launch_id)
    _private_dir(env, path.parent)
    raw = secrets.token_hex(32).encode()
    part = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    try:  # whole or not there: a rank never reads it half-written
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.rename(part, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(part)
        what = "is a directory" if path.is_dir() else "cannot be written"
        raise BadInput(f"the job's secret file {path} {what} ({e.strerror}); remove it, or "
                       f"export {SECRET_ENV}") from None
    return Secret(_derive(raw), str(path), str(path))


def read_file(env: Mapping[str, str], launch_id: str) -> Secret | None:
    """A rank other than 0: the secret rank 0 wrote (None while the file is not there yet),
    opened by ``open_input`` (no link followed, nothing but a regular file read); BadInput
    when it is something else or too short, AuthError when it is not private to this uid."""
    path = secret_path(env, launch_id)
    if not os.path.lexists(path):  # asked first: once there, rank 0's renames never remove it
        return None
    try:
        fd = open_input(path, "the job's secret file", follow=False)
    except BadInput as e:
        raise BadInput(f"{e}: remove it, or export {SECRET_ENV}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise AuthError(f"the job's secret file {path} must be a regular file of uid "
                            f"{os.geteuid()} with mode 0600")
        raw = f.read(256)
    if len(raw) < MIN_SECRET:  # rank 0 writes it whole (a rename): never half-written
        raise BadInput(f"the job's secret file {path} holds {len(raw)} bytes, fewer than "
                       f"{MIN_SECRET}: it is too short; remove it, or export {SECRET_ENV}")
    return Secret(_derive(raw), str(path))


def remove_file(secret: Secret) -> None:
    if secret.path:
        with contextlib.suppress(OSError):
            os.unlink(secret.path)


NONCE_BYTES = 16  # of every fresh value a rank draws for one launch


def fresh_nonce() -> str:
    """A value no earlier launch used (hex): rank 0's announces the launch, every other
    rank's proves that what rank 0 signs after the roll call was made for this launch."""
    return secrets.token_bytes(NONCE_BYTES).hex()


def session_nonce(rank0: str, nonces: list[str]) -> str:
    """The nonce every message after the roll call is bound to: rank 0's and every rank's
    (rank order, "" for a rank that did not arrive), hashed together."""
    blob = json.dumps([rank0, nonces], separators=(",", ":")).encode()
    return hashlib.sha256(b"envcheck session\0" + blob).hexdigest()


@dataclass(frozen=True)
class Binding:
    """What every message's MAC covers besides its bytes: the key, and the launch it belongs
    to (its nonce, run id, MASTER_ADDR:PORT and world size). A message is bound further to its
    sender rank and its phase (its store key, or the gather's step): a message recorded from
    another launch, phase or rank does not verify."""

    key: bytes
    run_id: str
    where: str  # MASTER_ADDR:PORT of the store
    world: int
    nonce: str = ""  # hex: rank 0's nonce before the roll call, session_nonce after it

    def mac(self, sender: int, phase: str, body: bytes) -> str:
        head = json.dumps([self.nonce, self.run_id, self.where, self.world, sender, phase],
                          separators=(",", ":")).encode()
        return hmac.new(self.key, head + b"\0" + body, hashlib.sha256).hexdigest()

    def sign(self, sender: int, phase: str, value: Any) -> str:
        """`value` as JSON behind its MAC: '<64 hex digits> <json>'."""
        body = json.dumps(value, separators=(",", ":"), allow_nan=False)
        return f"{self.mac(sender, phase, body.encode())} {body}"

    def verify(self, sender: int, phase: str, raw: bytes | str, limit: int = MAX_VALUE) -> Any:
        """The value `sign` wrote as `sender` in `phase` of this launch; AuthError when
        unsigned, forged, from another launch, phase or rank, or too big."""
        tag, body = split(raw, limit)
        if len(tag) != MAC_HEX or not hmac.compare_digest(
                tag, self.mac(sender, phase, body).encode()):
            raise AuthError("not signed with this job's secret for this launch, phase and "
                            "rank (another launch's message, or another secret)")
        return loads(body)


def split(raw: bytes | str, limit: int = MAX_VALUE) -> tuple[bytes, bytes]:
    """(MAC, JSON bytes) of a signed value, unverified; AuthError when over `limit`."""
    data = raw.encode("utf-8", "surrogateescape") if isinstance(raw, str) else bytes(raw)
    if len(data) > limit:
        raise AuthError(f"{len(data)} bytes, more than the {limit} allowed")
    tag, _, body = data.partition(b" ")
    return tag, body


def loads(body: bytes) -> Any:
    """Bounded JSON: valid UTF-8, no NaN or infinities, nesting at most MAX_DEPTH."""
    try:
        value = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise AuthError(f"not valid JSON ({type(e).__name__})") from None
    if depth(value) > MAX_DEPTH:
        raise AuthError(f"JSON nested deeper than {MAX_DEPTH}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def depth(value: Any) -> int:
    """How deeply lists and dicts nest in `value` (a scalar: 0), without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d + 1)
            if d + 1 > MAX_DEPTH:
                return d + 1
            todo.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def wait_file(env: Mapping[str, str], launch_id: str, deadline: float) -> Secret:
    """A rank other than 0: the secret file once rank 0 wrote it, until `deadline`."""
    while True:
        got = read_file(env, launch_id)
        if got is not None:
            return got
        if time.monotonic() > deadline:
            raise AuthError(f"no {SECRET_ENV} and rank 0's secret file "
                            f"{secret_path(env, launch_id)} did not appear: export the same "
                            f"{SECRET_ENV} to every rank, or put {SECRET_DIR_ENV} on storage "
                            "every host shares")
        time.sleep(0.05)
