"""An S3-compatible server on loopback for tests: moto's standalone server, started and stopped.

``ensure_endpoint()`` uses the endpoint in ``HICACHE_S3_ENDPOINT`` when one is set (a real
MinIO, Ceph RGW or AWS endpoint, or a server ``.ci/run`` started); otherwise it starts moto on a
free loopback port for the duration, and publishes it through the environment so the suite's
child processes reach the same server. Either way the bucket exists afterwards.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

ENDPOINT_ENV = "HICACHE_S3_ENDPOINT"
BUCKET_ENV = "HICACHE_S3_BUCKET"
DEFAULT_BUCKET = "hicache-conformance"
DEFAULTS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
"""moto's test credentials, used where the environment gives none."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def moto_server(timeout: float = 30.0) -> Iterator[str]:
    """Run ``moto.server`` on loopback until the block ends; yields its endpoint URL."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto server did not start on port {port} (exit {proc.poll()})")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_bucket(endpoint: str, bucket: str) -> None:
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region_name=os.environ["AWS_REGION"],
    )
    with contextlib.suppress(
        client.exceptions.BucketAlreadyOwnedByYou, client.exceptions.BucketAlreadyExists
    ):
        client.create_bucket(Bucket=bucket)


@contextlib.contextmanager
def ensure_endpoint() -> Iterator[None]:
    """An S3 endpoint and bucket for this session, from the environment or a moto server."""
    saved = {k: os.environ.get(k) for k in (ENDPOINT_ENV, BUCKET_ENV, *DEFAULTS)}
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault(BUCKET_ENV, DEFAULT_BUCKET)
    try:
        with contextlib.ExitStack() as stack:
            if not os.environ.get(ENDPOINT_ENV):
                os.environ[ENDPOINT_ENV] = stack.enter_context(moto_server())
            make_bucket(os.environ[ENDPOINT_ENV], os.environ[BUCKET_ENV])
            yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
