"""Submitted code, stored content-addressed: the key is the sha256 of the exact bytes, so storing is
idempotent, two miners' identical files are one object, and every read is checked against its name.

Local disk by default (`ARENA/code/ab/abcd…`); S3-compatible storage by URL
(`s3://bucket/prefix?endpoint=http://127.0.0.1:9000&region=us-east-1`, the `[s3]` extra; credentials
come from boto3's usual chain: environment, ~/.aws, instance role).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from shoparena.arena.errors import ArenaConfigError, CodeStoreError

SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")


def code_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _checked(sha256: str) -> str:
    if not SHA256_PATTERN.fullmatch(sha256):
        raise CodeStoreError(f"{sha256!r} is not a sha256 hex digest")
    return sha256


def _verified(sha256: str, data: bytes, where: str) -> bytes:
    actual = code_sha256(data)
    if actual != sha256:
        raise CodeStoreError(f"{where}: stored code does not match its sha256 (got {actual}); it was altered")
    return data


class CodeStore(Protocol):
    url: str

    def put(self, data: bytes) -> str:
        """Store `data`; returns its sha256 (storing the same bytes again is a no-op)."""

    def get(self, sha256: str) -> bytes:
        """The stored bytes, verified against `sha256`; CodeStoreError when absent or altered."""

    def exists(self, sha256: str) -> bool: ...


class LocalCodeStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.url = str(self.root)

    def path(self, sha256: str) -> Path:
        sha256 = _checked(sha256)
        return self.root / sha256[:2] / sha256

    def put(self, data: bytes) -> str:
        sha256 = code_sha256(data)
        target = self.path(sha256)
        if target.exists():
            return sha256
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temporary, 0o444)
            os.replace(temporary, target)  # atomic: a reader sees the whole file or none
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return sha256

    def get(self, sha256: str) -> bytes:
        path = self.path(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CodeStoreError(f"code {sha256} is not in {self.root}") from None
        except OSError as exc:
            raise CodeStoreError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return _verified(sha256, data, str(path))

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).exists()


class S3CodeStore:
    """Objects `PREFIX/ab/abcd…` in one bucket of any S3-compatible service."""

    def __init__(self, bucket: str, prefix: str = "", client: Any = None, url: str | None = None):
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.url = url or f"s3://{bucket}/{self.prefix}"
        self.client = client

    @classmethod
    def from_url(cls, url: str) -> S3CodeStore:
        parts = urlsplit(url)
        if not parts.netloc:
            raise ArenaConfigError(f"code store {url!r}: an S3 URL names its bucket: s3://BUCKET/PREFIX")
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        unknown = set(query) - {"endpoint", "region"}
        if unknown:
            raise ArenaConfigError(
                f"code store {url!r}: unknown parameter(s) {', '.join(sorted(unknown))}; "
                "an S3 URL takes ?endpoint=URL&region=NAME"
            )
        try:
            import boto3
        except ImportError:
            raise ArenaConfigError(f"code store {url!r} needs boto3: pip install 'shoparena[s3]'") from None
        client = boto3.client("s3", endpoint_url=query.get("endpoint"), region_name=query.get("region"))
        return cls(parts.netloc, parts.path, client=client, url=url)

    def key(self, sha256: str) -> str:
        sha256 = _checked(sha256)
        name = f"{sha256[:2]}/{sha256}"
        return f"{self.prefix}/{name}" if self.prefix else name

    def _errors(self) -> tuple[type[BaseException], ...]:
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError)

    def put(self, data: bytes) -> str:
        sha256 = code_sha256(data)
        if self.exists(sha256):
            return sha256
        try:
            self.client.put_object(
                Bucket=self.bucket,
                Key=self.key(sha256),
                Body=data,
                ContentType="text/x-python; charset=utf-8",
                Metadata={"sha256": sha256},
            )
        except self._errors() as exc:
            raise CodeStoreError(f"{self.url}: cannot store code {sha256}: {exc}") from exc
        return sha256

    def get(self, sha256: str) -> bytes:
        from botocore.exceptions import ClientError

        key = self.key(sha256)
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
            data = response["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise CodeStoreError(f"code {sha256} is not in {self.url}") from None
            raise CodeStoreError(f"{self.url}: cannot read code {sha256}: {exc}") from exc
        except self._errors() as exc:
            raise CodeStoreError(f"{self.url}: cannot read code {sha256}: {exc}") from exc
        return _verified(sha256, data, f"s3://{self.bucket}/{key}")

    def exists(self, sha256: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise CodeStoreError(f"{self.url}: cannot look up code {sha256}: {exc}") from exc
        except self._errors() as exc:
            raise CodeStoreError(f"{self.url}: cannot look up code {sha256}: {exc}") from exc
        return True


def open_code_store(spec: str, arena_dir: Path) -> CodeStore:
    """A directory (relative to the arena directory) or an `s3://` URL."""
    if spec.startswith("s3://"):
        return S3CodeStore.from_url(spec)
    if "://" in spec:
        raise ArenaConfigError(f"code store {spec!r}: use a directory or s3://BUCKET/PREFIX")
    return LocalCodeStore(Path(arena_dir) / spec)
