"""Run the docs' ``scoutless`` examples in one subprocess (one interpreter start for all):
``python examples_driver.py PLAN.json RESULTS.json``. The plan is a list of
``{"argv": [...], "cwd": DIR, "stdout": FILE or null}``; each result holds the exit code
and the output's tail."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
import traceback


def run_one(app, step: dict) -> dict:  # type: ignore[no-untyped-def]
    os.chdir(step["cwd"])
    start = time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            returned = app(step["argv"], standalone_mode=False, prog_name="scoutless")
            code = returned if isinstance(returned, int) else 0  # typer.Exit's code
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # reported, not raised: the next example runs
            code, _ = getattr(exc, "exit_code", 1) or 1, traceback.print_exc()
    if step.get("stdout"):
        with open(step["stdout"], "w") as f:
            f.write(out.getvalue())
    seconds = round(time.perf_counter() - start, 2)
    return {"code": code, "output": (out.getvalue() + err.getvalue())[-3000:], "s": seconds}


def main(plan_path: str, results_path: str) -> None:
    from scoutless.cli.main import app

    with open(plan_path) as f:
        plan = json.load(f)
    results = [run_one(app, step) for step in plan]
    with open(results_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
