"""A stand-in for JEDI and the files panda-common's agent needs: for the end-to-end tests,
``benchmarks/listen.py`` and trying the integration on one machine.

``JediStandIn`` inserts tasks as JEDI's task refiner leaves them (``defined``,
splitRule ``PC=1,US=2``) into a PanDA database and publishes their status changes the way
``push_task_status_message`` does. ``write_agent_files`` writes the ``panda_common.cfg``
and the message-processor JSON that run :mod:`scoutless.panda.jedi_plugin` under
panda-common's own ``MsgProcAgentBase`` (``python -m scoutless.panda.agent``).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd
import stomp
from sqlalchemy import Engine, text

from scoutless.history.db_write import bulk_insert


class JediStandIn:
    """Inserts tasks as JEDI's refiner leaves them (``defined``, ``PC=1,US=2``) and
    publishes their status like ``push_task_status_message``."""

    def __init__(self, engine: Engine, frames, broker: tuple[str, int], status_queue: str):  # type: ignore[no-untyped-def]
        self.engine = engine
        self.frames = frames
        self.status_queue = status_queue
        self.broker = broker
        self.used = 0
        self.reconnect()

    def reconnect(self) -> None:
        self.conn = stomp.Connection12([self.broker], vhost="/")
        self.conn.connect(wait=True)

    def insert(self, n: int, *, status: str = "defined") -> list[int]:
        tasks = self.frames.tasks.iloc[self.used : self.used + n].copy()
        self.used += n
        ids = tasks["jeditaskid"].astype(int).tolist()
        now = datetime.now()
        for col in ("ramcount", "cputime", "walltime", "iointensity", "diskio"):
            tasks[col] = pd.Series([None] * n, dtype="Int64", index=tasks.index)
        tasks = tasks.assign(status=status, splitrule="PC=1,US=2", iointensityunit=None,
                             creationdate=now, modificationtime=now)  # fmt: skip
        bulk_insert(self.engine, "jedi_tasks", tasks)
        bulk_insert(
            self.engine,
            "jedi_taskparams",
            self.frames.taskparams[self.frames.taskparams.jeditaskid.isin(ids)],
        )
        bulk_insert(
            self.engine,
            "jedi_datasets",
            self.frames.datasets[self.frames.datasets.jeditaskid.isin(ids)],
        )
        return ids

    def publish(
        self, task_id: int, status: str = "defined", timestamp: float | None = None
    ) -> None:
        body = {"msg_type": "task_status", "taskid": task_id, "status": status,
                "timestamp": int(time.time()) if timestamp is None else timestamp}  # fmt: skip
        self.send(json.dumps(body))

    def send(self, body: str) -> None:
        self.conn.send(self.status_queue, body, headers={"persistent": "true"})

    def close(self) -> None:
        if self.conn.is_connected():
            self.conn.disconnect()

    def updated(self, ids: list[int]) -> dict[int, dict]:
        """Tasks whose splitrule says no scouts (US=1), with their resource columns."""
        sql = text(
            "SELECT jeditaskid, status, splitrule, ramcount, ramunit, cputime, cputimeunit, "
            "iointensity, iointensityunit, walltime, walltimeunit FROM jedi_tasks "
            "WHERE jeditaskid = ANY(:ids)"
        )
        with self.engine.connect() as conn:
            rows = conn.execute(sql, {"ids": ids}).mappings().all()
        return {r["jeditaskid"]: dict(r) for r in rows if "US=1" in (r["splitrule"] or "")}


#: panda-common's [logger] section (its template, panda_common.cfg.rpmnew), logs to a folder
PANDA_COMMON_CFG = """[logger]
loghost=localhost
monport-apache=80
method=GET
encoding=url
loghost_new=localhost
monport-apache_new=8081
method_new=POST
encoding_new=json
monurlprefix=/logger/logger/query
logdir={logdir}
nemitters=1
migrated=True
log_level=INFO
rotating_policy=none
rotating_backup_count=1
rotating_max_size=1024
rotating_interval=24
"""


@dataclass(frozen=True)
class AgentFiles:
    config: Path  # the message-processor JSON (JEDI: jedi_config.msgprocessor.configFile)
    panda_home: Path  # $PANDA_HOME: etc/panda/panda_common.cfg
    plugin_log: Path  # where panda-common's logger writes the plugin's lines


def write_agent_files(
    folder: Path, *, db: str, broker: tuple[str, int], prediction_queue: str, n_threads: int = 2
) -> AgentFiles:
    """panda_common.cfg + the agent JSON running the scoutless plugin on one queue."""
    home, logdir = folder / "panda_home", folder / "panda_logs"
    (home / "etc/panda").mkdir(parents=True, exist_ok=True)
    logdir.mkdir(parents=True, exist_ok=True)
    (home / "etc/panda/panda_common.cfg").write_text(PANDA_COMMON_CFG.format(logdir=logdir))
    server = {"host_port_list": [f"{broker[0]}:{broker[1]}"], "use_ssl": False,
              "username": "guest", "passcode": "guest", "vhost": "/", "verbose": False}  # fmt: skip
    processor = {"enable": True, "module": "scoutless.panda.jedi_plugin",
                 "name": "ScoutPredictionProcessor", "n_threads": n_threads,
                 "in_queue": "scout_prediction", "params": {"db_url": db}}  # fmt: skip
    config = {
        "guard_period": 1,  # seconds between reconnection checks (panda-common: 300)
        "mb_servers": {"local": server},
        "queues": {
            "scout_prediction": {"enable": True, "server": "local", "destination": prediction_queue}
        },
        "processors": {"scout_prediction": processor},
    }
    path = folder / "msg_processor.json"
    path.write_text(json.dumps(config, indent=1))
    return AgentFiles(path, home, logdir / "panda-scoutless_scout_prediction.log")


def applied_counts(plugin_log: Path) -> dict[int, int]:
    """task id → how many times the plugin logged 'applied' for it."""
    counts: dict[int, int] = {}
    if plugin_log.exists():
        for m in re.finditer(
            r"task_id=(\d+) model=\S+(?: arm=\S+)?: applied", plugin_log.read_text()
        ):
            counts[int(m.group(1))] = counts.get(int(m.group(1)), 0) + 1
    return counts
