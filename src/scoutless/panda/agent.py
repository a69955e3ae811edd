"""Run panda-common's message-processor agent on a JSON config, as JEDI's launcher does.

``python -m scoutless.panda.agent CONFIG.json`` is ``JediMsgProcessor.launcher`` without
the rest of JEDI: for a site that wants the scoutless plugin in its own process, and for
the end-to-end tests. panda-common reads ``$PANDA_HOME/etc/panda/panda_common.cfg`` (its
``[logger]`` section: ``logdir``, ``log_level``) at import, like every PanDA component.
"""

from __future__ import annotations

import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m scoutless.panda.agent CONFIG.json", file=sys.stderr)
        return 2
    from pandacommon.pandamsgbkr.msg_processor import MsgProcAgentBase

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    agent = MsgProcAgentBase(args[0])
    agent.start()
    print("agent started", flush=True)
    stop.wait()
    agent.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
