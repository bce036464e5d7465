"""Content-addressed code storage: the local directory, and S3 through botocore's Stubber."""

from __future__ import annotations

import io

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from shoparena.arena.codestore import LocalCodeStore, S3CodeStore, code_sha256, open_code_store
from shoparena.arena.errors import ArenaConfigError, CodeStoreError

CODE = b"def agent_main(problem_data):\n    return []\n"
SHA = code_sha256(CODE)


def test_local_store_is_content_addressed_and_idempotent(tmp_path):
    store = LocalCodeStore(tmp_path / "code")
    assert store.put(CODE) == SHA
    path = tmp_path / "code" / SHA[:2] / SHA
    assert path.read_bytes() == CODE
    assert store.put(CODE) == SHA
    assert store.exists(SHA) and store.get(SHA) == CODE
    assert list((tmp_path / "code" / SHA[:2]).iterdir()) == [path]  # no temporary left behind


def test_local_store_detects_tampering_and_refuses_bad_names(tmp_path):
    store = LocalCodeStore(tmp_path / "code")
    store.put(CODE)
    path = store.path(SHA)
    path.chmod(0o644)
    path.write_bytes(CODE + b"# altered\n")
    with pytest.raises(CodeStoreError, match="altered"):
        store.get(SHA)
    with pytest.raises(CodeStoreError, match="not in"):
        store.get("0" * 64)
    for bad in ("../../etc/passwd", SHA.upper(), SHA[:-1]):
        with pytest.raises(CodeStoreError, match="not a sha256"):
            store.get(bad)


@pytest.fixture
def s3():
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stubber:
        yield S3CodeStore("bucket", "arena/code", client=client), stubber
        stubber.assert_no_pending_responses()


def body(data: bytes) -> StreamingBody:
    return StreamingBody(io.BytesIO(data), len(data))


def test_s3_put_uploads_new_code_under_its_hash(s3):
    store, stubber = s3
    key = f"arena/code/{SHA[:2]}/{SHA}"
    stubber.add_client_error(
        "head_object", "404", http_status_code=404, expected_params={"Bucket": "bucket", "Key": key}
    )
    stubber.add_response(
        "put_object",
        {},
        {
            "Bucket": "bucket",
            "Key": key,
            "Body": CODE,
            "ContentType": "text/x-python; charset=utf-8",
            "Metadata": {"sha256": SHA},
        },
    )
    assert store.put(CODE) == SHA


def test_s3_put_skips_code_stored_already(s3):
    store, stubber = s3
    stubber.add_response(
        "head_object", {"ContentLength": len(CODE)}, {"Bucket": "bucket", "Key": store.key(SHA)}
    )
    assert store.put(CODE) == SHA  # no put_object queued: a second upload would fail the stubber


def test_s3_get_verifies_content(s3):
    store, stubber = s3
    params = {"Bucket": "bucket", "Key": store.key(SHA)}
    stubber.add_response("get_object", {"Body": body(CODE)}, params)
    assert store.get(SHA) == CODE
    stubber.add_response("get_object", {"Body": body(CODE + b"x")}, params)
    with pytest.raises(CodeStoreError, match="altered"):
        store.get(SHA)
    stubber.add_client_error("get_object", "NoSuchKey", http_status_code=404, expected_params=params)
    with pytest.raises(CodeStoreError, match="not in s3://bucket/arena/code"):
        store.get(SHA)
    stubber.add_client_error("get_object", "AccessDenied", http_status_code=403, expected_params=params)
    with pytest.raises(CodeStoreError, match="AccessDenied"):
        store.get(SHA)


def test_s3_urls(tmp_path):
    store = open_code_store(
        "s3://bucket/some/prefix?endpoint=http://127.0.0.1:9000&region=eu-west-1", tmp_path
    )
    assert isinstance(store, S3CodeStore)
    assert store.key(SHA) == f"some/prefix/{SHA[:2]}/{SHA}"
    assert store.client.meta.endpoint_url == "http://127.0.0.1:9000"
    assert store.client.meta.region_name == "eu-west-1"
    assert S3CodeStore("b").key(SHA) == f"{SHA[:2]}/{SHA}"
    with pytest.raises(ArenaConfigError, match="names its bucket"):
        open_code_store("s3:///prefix", tmp_path)
    with pytest.raises(ArenaConfigError, match="unknown parameter"):
        open_code_store("s3://b/p?secret=x", tmp_path)
    with pytest.raises(ArenaConfigError, match="s3://"):
        open_code_store("gs://b/p", tmp_path)
    assert isinstance(open_code_store("code", tmp_path), LocalCodeStore)
