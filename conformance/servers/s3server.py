"""An S3-compatible server on loopback for tests: moto's standalone server or Ceph's RADOS Gateway.

``ensure_endpoint()`` uses the endpoint in ``HICACHE_S3_ENDPOINT`` when one is set (a MinIO,
Ceph or AWS endpoint of your own); otherwise it starts the server ``HICACHE_S3_SERVER`` names on
loopback for the duration: ``moto`` (the default: a stand-in, up in a second) or ``rgw`` (Ceph's
gateway on a one-host cluster, :mod:`conformance.servers.rgw`: a real S3 implementation, up in seconds),
and publishes it through the environment so the suite's child processes reach the same server.
Either way the bucket exists afterwards. ``server()`` says which server that was, for the
certification report and for known defects that hold on one server only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

from conformance.model.capabilities import Server
from conformance.servers.services import LOOPBACK, environment, free_port, running

ENDPOINT_ENV = "HICACHE_S3_ENDPOINT"
BUCKET_ENV = "HICACHE_S3_BUCKET"
SERVER_ENV = "HICACHE_S3_SERVER"
SERVERS = ("moto", "rgw")
"""The servers the suite can start, by the name ``HICACHE_S3_SERVER`` gives; moto by default."""
CLIENT_SETTINGS = {"rgw": {"req_checksum": "required"}}
"""What NIXL's OBJ plugin must be told to talk to a server. Ceph 16.2's gateway refuses the
uploads AWS SDKs send by default since 2025 (aws-chunked, ``STREAMING-UNSIGNED-PAYLOAD-TRAILER``,
a CRC64NVME trailer, no Content-Length) with 411 MissingContentLength; ``required`` makes the SDK
add a request checksum only where an operation demands one, so a PUT is a plain sized body."""
DEFAULT_BUCKET = "hicache-conformance"
DEFAULTS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
"""moto's test credentials, used where the environment gives none."""


@contextlib.contextmanager
def moto_server(timeout: float = 30.0) -> Iterator[str]:
    """Run ``moto.server`` on loopback until the block ends; yields its endpoint URL."""
    port = free_port()
    argv = [sys.executable, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)]
    with running(argv, port, what="moto server", timeout=timeout):
        yield f"http://{LOOPBACK}:{port}"


@contextlib.contextmanager
def rgw_endpoint() -> Iterator[str]:
    """Run Ceph's gateway on loopback with the environment's credentials as a user; yields its URL."""
    from conformance.servers.rgw import rgw_server

    with rgw_server(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]) as cluster:
        yield cluster.endpoint


def chosen_server() -> str:
    """The server ``HICACHE_S3_SERVER`` names, moto where it names none; an unknown name is an error."""
    name = os.environ.get(SERVER_ENV) or "moto"
    if name not in SERVERS:
        raise ValueError(f"{SERVER_ENV}={name!r}: the suite starts {' or '.join(SERVERS)}")
    return name


def client_settings() -> dict[str, str]:
    """The OBJ plugin parameters the chosen (or named) server needs, for the suite's factories."""
    return dict(CLIENT_SETTINGS.get(os.environ.get(SERVER_ENV) or "moto", {}))


def server() -> Server:
    """The S3 server a session meets: ``moto`` or ``rgw``, described with the version installed
    here (``moto 5.2.1``, ``ceph radosgw 16.2.15``); for an endpoint of the user's own, what
    ``HICACHE_S3_SERVER`` calls it (``given endpoint`` where it says nothing)."""
    named = os.environ.get(SERVER_ENV)
    if os.environ.get(ENDPOINT_ENV) and named not in SERVERS:
        return Server(named or "given endpoint", named or "given endpoint")
    name = chosen_server()
    if name == "rgw":
        from conformance.servers import rgw

        return Server(name, f"ceph radosgw {rgw.version()}")
    return Server(name, f"moto {version('moto')}")


def _client(endpoint: str) -> Any:
    """A boto3 client on ``endpoint`` with the session's credentials."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region_name=os.environ["AWS_REGION"],
    )


def make_bucket(endpoint: str, bucket: str) -> None:
    client = _client(endpoint)
    with contextlib.suppress(
        client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists
    ):
        client.create_bucket(Bucket=bucket)


@contextlib.contextmanager
def ensure_endpoint() -> Iterator[None]:
    """An S3 endpoint and bucket for this session, from the environment or a server started here."""
    given = {k: v for k in (ENDPOINT_ENV, BUCKET_ENV, *DEFAULTS) if (v := os.environ.get(k))}
    wanted = {**DEFAULTS, BUCKET_ENV: DEFAULT_BUCKET, **given}
    with contextlib.ExitStack() as stack:
        stack.enter_context(environment(wanted))
        if ENDPOINT_ENV not in wanted:
            server = rgw_endpoint() if chosen_server() == "rgw" else moto_server()
            stack.enter_context(environment({ENDPOINT_ENV: stack.enter_context(server)}))
        make_bucket(os.environ[ENDPOINT_ENV], wanted[BUCKET_ENV])
        yield


def forget_prefix(prefix: str) -> None:
    """Delete every object of the session's bucket whose name starts with ``prefix``: what a
    storage location left there (``BackendSpec.forget``). S3 deletes a thousand a request."""
    client, bucket = _client(os.environ[ENDPOINT_ENV]), os.environ[BUCKET_ENV]
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    for page in pages:
        if names := [{"Key": o["Key"]} for o in page.get("Contents", [])]:
            client.delete_objects(Bucket=bucket, Delete={"Objects": names})


class BucketPrefix:
    """The objects of the session's bucket under one prefix (``BackendSpec.bucket``): what the
    damage properties shorten and bit-flip where a backend stores objects, not files."""

    def __init__(self, prefix: str) -> None:
        self.client, self.bucket, self.prefix = (
            _client(os.environ[ENDPOINT_ENV]),
            os.environ[BUCKET_ENV],
            prefix,
        )

    def states(self) -> dict[str, tuple[int, str]]:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        return {o["Key"]: (o["Size"], o["ETag"]) for page in pages for o in page.get("Contents", [])}

    def read(self, name: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.bucket, Key=name)["Body"].read())

    def write(self, name: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=name, Body=data)


def serve() -> None:
    """``python -m conformance.servers.s3server``: start the server ``HICACHE_S3_SERVER`` names
    with the session's credentials and bucket, print its endpoint, and stop it on SIGTERM. One
    server for several certification runs, each given it through ``HICACHE_S3_ENDPOINT``: CI runs
    both S3 backends on one gateway cluster, where each test process would build its own."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with environment({**DEFAULTS, BUCKET_ENV: DEFAULT_BUCKET, **os.environ}), ensure_endpoint():
        print(os.environ[ENDPOINT_ENV], flush=True)
        signal.pause()


if __name__ == "__main__":
    serve()
