"""An S3-compatible server on loopback for tests: moto's standalone server, started and stopped.

``ensure_endpoint()`` uses the endpoint in ``HICACHE_S3_ENDPOINT`` when one is set (a real
MinIO, Ceph RGW or AWS endpoint, or a server ``.ci/run`` started); otherwise it starts moto on a
free loopback port for the duration, and publishes it through the environment so the suite's
child processes reach the same server. Either way the bucket exists afterwards.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from conformance.services import LOOPBACK, environment, free_port, running

ENDPOINT_ENV = "HICACHE_S3_ENDPOINT"
BUCKET_ENV = "HICACHE_S3_BUCKET"
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
    given = {k: v for k in (ENDPOINT_ENV, BUCKET_ENV, *DEFAULTS) if (v := os.environ.get(k))}
    wanted = {**DEFAULTS, BUCKET_ENV: DEFAULT_BUCKET, **given}
    with contextlib.ExitStack() as stack:
        if ENDPOINT_ENV not in wanted:
            wanted[ENDPOINT_ENV] = stack.enter_context(moto_server())
        stack.enter_context(environment(wanted))
        make_bucket(wanted[ENDPOINT_ENV], wanted[BUCKET_ENV])
        yield
