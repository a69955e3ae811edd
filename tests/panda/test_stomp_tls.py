"""STOMP over TLS (``stomp+ssl://``) against RabbitMQ's TLS listener, whose certificate a
CA made by ``scripts/rabbitmq.sh`` signed: verified by that CA it connects, subscribes,
publishes with a receipt and receives; verified by the system's CAs it is refused."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from panda_world import port_open

from scoutless.config import ListenerSettings
from scoutless.panda.broker import BrokerUnavailable, StompBroker, TlsFiles, tls_files

DIR = Path(os.environ.get("SCOUTLESS_RABBIT_DIR", "/tmp/scoutless-rabbitmq"))
TLS_URL = os.environ.get("SCOUTLESS_TEST_STOMP_TLS_URL", "stomp+ssl://127.0.0.1:61620")
TLS_CA = os.environ.get("SCOUTLESS_TEST_STOMP_TLS_CA", str(DIR / "tls/ca.pem"))


@pytest.fixture(scope="module")
def tls_broker() -> str:
    host_port = TLS_URL.removeprefix("stomp+ssl://").rsplit(":", 1)
    if not Path(TLS_CA).is_file() or not port_open(host_port[0], int(host_port[1])):
        pytest.skip(f"no STOMP TLS listener at {TLS_URL} with CA {TLS_CA} (scripts/rabbitmq.sh)")
    return TLS_URL


def test_stomp_over_tls_verified_by_the_local_ca(tls_broker: str) -> None:
    queue = f"/queue/test_tls_{uuid.uuid4().hex[:8]}"
    broker = StompBroker(tls_broker, queue, tls=TlsFiles(ca_file=TLS_CA), heartbeat_ms=0)
    broker.connect_once()
    try:
        assert broker.describe().startswith("stomp+ssl://")
        broker.send_confirmed(queue, ['{"over": "tls"}'], timeout_s=10)
        frame = broker.frames.get(timeout=10)
        assert frame.body == '{"over": "tls"}' and broker.ack(frame)
    finally:
        broker.close()


def test_a_broker_the_ca_does_not_vouch_for_is_refused(tls_broker: str) -> None:
    broker = StompBroker(tls_broker, "/queue/never", heartbeat_ms=0)  # the system's CAs
    with pytest.raises(BrokerUnavailable, match="stomp\\+ssl://"):
        broker.connect_once()
    assert not broker.connected.is_set()


def test_tls_settings_reach_the_broker_only_for_stomp_ssl() -> None:
    s = ListenerSettings(broker="stomp+ssl://mq.example.org:61614", tls_ca_file="/etc/ca.pem")
    assert tls_files(s) == TlsFiles("/etc/ca.pem", None, None)
    assert tls_files(ListenerSettings(broker="stomp://127.0.0.1:61613")) is None
    with pytest.raises(ValueError, match="plain stomp://"):
        StompBroker("stomp://127.0.0.1:61613", "/queue/x", tls=TlsFiles("/etc/ca.pem"))
