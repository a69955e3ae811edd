"""``scoutless online``: the job follower in production (``follow``) and what it did to a
task (``status``)."""

from __future__ import annotations

from typing import Annotated

import typer

from scoutless.cli.lazy import LazyConsole, get_settings

app = typer.Typer(no_args_is_help=True, help="Every job of a sized task learnt; retries sized.")
console = LazyConsole()

DbOption = Annotated[str | None, typer.Option(help="PanDA database URL (default: settings)")]


@app.command()
def follow(
    db: DbOption = None,
    broker: Annotated[
        str | None, typer.Option(help="stomp://HOST:PORT of the job_status messages (none: poll)")
    ] = None,
    subscribe: Annotated[
        str | None, typer.Option(help="the job_status destination (panda_jobstatus)")
    ] = None,
    poll_interval: Annotated[
        float | None, typer.Option(help="read the job tables at least this often (s)")
    ] = None,
) -> None:
    """Follow the jobs of the tasks scoutless sized: learn each, write memory retries."""
    import logging
    import signal
    import threading

    from scoutless.config import updated
    from scoutless.history.panda_db import existing_database
    from scoutless.panda.broker import StompBroker, tls_files
    from scoutless.panda.job_follower import JobFollower
    from scoutless.panda.job_trigger import JobTrigger

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    settings = get_settings()
    follower = updated(settings.job_follower, poll_interval_s=poll_interval)
    settings = settings.model_copy(update={"job_follower": follower})
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    engine = existing_database(db or settings.resolved_db_url(), schema=settings.db_schema)
    s = settings.listener
    stomp = None
    if broker is not None:
        if not subscribe:
            raise typer.BadParameter("--subscribe: the job_status destination is needed")
        stomp = StompBroker(broker, subscribe, username=s.username, passcode=s.passcode,
                            prefetch=s.prefetch, heartbeat_ms=s.heartbeat_ms, vhost=s.vhost,
                            tls=tls_files(s.model_copy(update={"broker": broker})))  # fmt: skip
    follower = JobFollower(engine, settings)
    console.print(
        f"following the jobs of sized tasks (rollout {follower.mode()}); "
        f"messages: {f'{broker}{subscribe}' if stomp else 'none, polling'} "
        f"every {settings.job_follower.poll_interval_s:g} s"
    )
    try:
        JobTrigger(follower, stomp).run(stop)
    finally:
        engine.dispose()


@app.command()
def status(
    task: Annotated[int, typer.Argument(help="jediTaskID")],
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="show this many of its latest jobs")] = 20,
) -> None:
    """A task's online state (per job kind and resource: outcomes learnt, the posterior's
    ramCount or cpuTime) and the follower's writes (each job's retry ramCount, the task's
    ramCount, cpuTime and walltime), and whether it was forgotten."""
    from rich.table import Table

    from scoutless.history.panda_db import existing_database
    from scoutless.panda.job_status import task_status

    settings = get_settings()
    engine = existing_database(db or settings.resolved_db_url(), schema=settings.db_schema)
    try:
        report = task_status(engine, task, settings, limit=limit)
    finally:
        engine.dispose()
    if not report.kinds and not report.jobs:
        console.print(f"task {task}: no job of it followed yet")
        return
    console.print(
        f"task {task}: ramCount {report.ramcount} {report.ramunit or ''}; written by the "
        f"follower {report.ramcount_written}, floor {report.ramcount_floor}"
    )
    times = report.times_written
    console.print(
        f"task {task}: cpuTime {report.cputime} {report.cputimeunit or ''}, walltime "
        f"{report.walltime}; written by the follower cpuTime {times.get('cputime_written')} "
        f"{times.get('cputimeunit_written') or ''}, walltime {times.get('walltime_written')}, "
        f"cpuTime floor {_num(times.get('cputime_floor'))} HS06·s/event"
    )
    if report.forgotten:
        console.print(f"task {task}: forgotten ({report.forgotten['reason']}) at "
                      f"{report.forgotten['forgotten_at']}: its jobs are left unread")  # fmt: skip
    kinds = Table(title="online state per job kind")
    for name in ("kind", "resource", "outcomes", "bounds", "posterior ramCount (MB/core)",
                 "posterior cpuTime (HS06·s/event)"):  # fmt: skip
        kinds.add_column(name)
    for k in report.kinds:
        kinds.add_row(k.kind, k.resource, str(k.outcomes), str(k.bounds), _num(k.posterior_ram),
                      _num(k.posterior_cputime))  # fmt: skip
    console.print(kinds)
    jobs = Table(title=f"latest {len(report.jobs)} jobs handled")
    for name in ("pandaid", "kind", "cause", "need MB/core", "mode", "retry ramCount",
                 "files raised", "task ramCount", "need HS06·s/event", "task cpuTime",
                 "task walltime"):  # fmt: skip
        jobs.add_column(name)
    for j in report.jobs:
        t = j["time"]  # what it decided (in shadow, or for an ended task, not written)
        time_need = ("≥ " if t.get("bound") else "") + _num(t.get("need")) if t else "-"
        jobs.add_row(str(j["pandaid"]), j["kind"], j["cause"], _num(j["need"]), j["mode"],
                     _num(j["file_ramcount"]), _num(j["files_raised"]),
                     _num(j["task_ramcount"]), time_need,
                     _num(t.get("cputime")), _num(t.get("walltime")))  # fmt: skip
    console.print(jobs)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}" if abs(value) >= 10 else f"{value:.3g}"
