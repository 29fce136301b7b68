"""``gateway.port = 0`` picks a free port once: a restart of the crashed gateway listens on
that same port again, so ``ServeInfo.url`` (and the ``serving`` log line) stays where the
clients are, and a client that reconnects finds the server."""

from __future__ import annotations

import functools
import logging
import re

import trio
import trio.testing

from tidings.channels import GatewayClient
from tidings.supervisor import FaultPlan, FaultRule, Seam
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl

TOKEN = "serve-test-token"


async def test_a_restarted_gateway_listens_where_it_said_it_does(tmp_path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    config = load_config(db=str(tmp_path / "serve.db"), port=0, token=TOKEN,
                         workspace=str(tmp_path))
    plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="gateway", times=1)])
    control = StopControl()
    async with trio.open_nursery() as nursery:
        info = await nursery.start(functools.partial(serve, config, control, fault_plan=plan))
        async with GatewayClient.connect(info.url, token=TOKEN, conversation="a") as client:
            assert client.welcome["type"] == "welcome"
        info.supervisor.mailbox("gateway").send_nowait("crash, please")
        with trio.fail_after(10):
            while info.supervisor.statistics().restarts < 1:
                await trio.testing.wait_all_tasks_blocked()
        assert info.gateway.port == info.port
        with trio.fail_after(10):
            async with GatewayClient.connect(info.url, token=TOKEN, conversation="a") as client:
                assert client.welcome["type"] == "welcome"
        control.request("test")
    listening = [re.search(r"url=(\S+) incarnation=(\d)", record.getMessage()).groups()
                 for record in caplog.records
                 if "event=gateway_listening" in record.getMessage()]
    assert listening == [(info.url, "1"), (info.url, "2")]
