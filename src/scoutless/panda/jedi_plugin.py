"""JEDI-side processor plugin for ``scout_prediction`` messages (panda-common's agent).

Configure it in JEDI's message-processor JSON (``jedi_config.msgprocessor.configFile``),
the same way as JEDI's own processors::

    "processors": {
      "scout_prediction": {
        "enable": true, "module": "scoutless.panda.jedi_plugin",
        "name": "ScoutPredictionProcessor", "n_threads": 1, "in_queue": "scout_prediction",
        "params": {"db_url": "postgresql+psycopg://panda@dbhost/panda", "db_schema": "doma_panda"}
      }
    }

``process`` returns normally for every message it has dealt with (applied, or logged and
dropped: malformed — ids beyond int64, resources beyond PanDA's ``integer`` columns —,
unknown task, task already scouting, a value the database refuses) so the agent acks it; a
database outage raises, the agent then aborts the STOMP transaction and the message is
redelivered.
"""

from __future__ import annotations

from typing import Any

from pandacommon.pandalogger import logger_utils
from pandacommon.pandamsgbkr.msg_processor import SimpleMsgProcPluginBase

from scoutless.config import PANDA_SCHEMA
from scoutless.history.panda_db import DatabaseUnavailable, make_engine
from scoutless.jedi.messages import MalformedMessage, parse_scout_prediction
from scoutless.panda.apply import Outcome, apply_prediction
from scoutless.panda.dead_letters import data_fault, one_line

base_logger = logger_utils.setup_logger("scoutless_scout_prediction")


class ScoutPredictionProcessor(SimpleMsgProcPluginBase):
    """Applies scout predictions to ``jedi_tasks`` (see :mod:`scoutless.panda.apply`)."""

    def initialize(self) -> None:
        params: dict[str, Any] = self.params
        if not params.get("db_url"):
            raise ValueError("ScoutPredictionProcessor: params.db_url is required")
        self.engine = make_engine(
            params["db_url"], create_dirs=False, schema=params.get("db_schema", PANDA_SCHEMA)
        )

    def terminate(self) -> None:
        self.engine.dispose()

    def process(self, msg_obj: Any) -> None:
        log = logger_utils.make_logger(base_logger, token=self.get_pid(), method_name="process")
        try:
            prediction = parse_scout_prediction(msg_obj.data)
        except MalformedMessage as exc:
            log.error(f"msg_id={msg_obj.msg_id}: malformed scout_prediction, dropped: {exc}")
            return None
        try:
            outcome = apply_prediction(self.engine, prediction)
        except DatabaseUnavailable as exc:
            if not data_fault(exc):
                raise  # an outage: not acked, redelivered
            log.error(
                f"msg_id={msg_obj.msg_id} task_id={prediction.task_id}: the database refused "
                f"the values, dropped: {one_line(str(exc), 500)}"
            )
            return None
        line = (
            f"task_id={prediction.task_id} model={prediction.model_version} "
            f"arm={prediction.arm or '-'}: {outcome.value}"
        )
        if outcome is Outcome.APPLIED:
            log.info(line)
        else:
            log.warning(f"{line}; prediction dropped, task left as it is")
        return None
