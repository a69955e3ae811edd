"""Run a service for the tests in a real uvicorn process: ``python service_server.py PORT JSON``.

JSON holds ``create_app`` options; ``"fake": true`` serves :class:`FakePredictor` bundles
(loaded by folder name), otherwise real bundles are loaded.
"""

from __future__ import annotations

import json
import sys

import uvicorn
from service_fakes import fake_loader, panda_history

from scoutless.config import get_settings
from scoutless.service.app import create_app
from scoutless.service.http_head import http_protocol


def main() -> None:
    port = int(sys.argv[1])
    options = json.loads(sys.argv[2])
    if options.get("db_url", "").startswith("sqlite:"):  # a fresh test database: a history
        panda_history(options["db_url"])
    if options.pop("fake", False):
        options["loader"] = fake_loader
    app = create_app(**options)
    http = http_protocol(get_settings().service)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, http=http)


if __name__ == "__main__":
    main()
