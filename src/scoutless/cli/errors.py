"""What the command line says when its input is wrong: one line on stderr, exit 2.

Every verb runs inside :func:`one_line_errors` (the ``scoutless`` group's ``invoke``): an
exception a user's input explains (a file that is not there, a URL that is not one, a
folder that is not a bundle, a value out of its domain …) is printed as
``scoutless: error: WHAT`` and the command exits 2; any other exception is a bug in
scoutless and keeps its traceback. The expected errors are named here by dotted class name
(:data:`USER_ERRORS`), so that deciding costs no import: a verb's ``--help`` stays light.
A verb that knows more than the exception (the file it read, an option that would help)
raises :class:`UserError` with the message it wants.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import typer

#: the exit status of every error the user's input explains (click's, for usage errors)
USER_ERROR_EXIT = 2
#: exceptions (and their subclasses) that a user's input or environment explains
USER_ERRORS: frozenset[str] = frozenset({
    "builtins.FileNotFoundError", "builtins.NotADirectoryError", "builtins.IsADirectoryError",
    "builtins.PermissionError", "json.decoder.JSONDecodeError", "sqlalchemy.exc.ArgumentError",
    # PEP 249: the database's operation, not the program (a host that does not resolve, a
    # server that refuses, a password refused, a locked or full file)
    "sqlalchemy.exc.OperationalError",
    "pydantic_core._pydantic_core.ValidationError",
    "scoutless.cli.errors.UserError",
    "scoutless.allocation.arms.RolloutError", "scoutless.allocation.policies.PolicyError",
    "scoutless.allocation.values.CalibrationError", "scoutless.client.ServiceError",
    "scoutless.config.settings.SettingsFileError", "scoutless.distributed.cluster.SchedulerError",
    "scoutless.config.settings.SettingsEnvError",
    "scoutless.distributed.sources.ExportError", "scoutless.evaluation.evaluate.EvaluationError",
    "scoutless.features.schema.SchemaError", "scoutless.features.domains.DomainError",
    "scoutless.history.panda_db.DatabaseUnavailable",
    "scoutless.history.panda_db.TaskNotFound", "scoutless.config.settings.BadDatabaseUrl",
    "scoutless.history.table.TableError", "scoutless.history.task_reader.BadTaskRecord",
    "scoutless.history.validation.BadRowsError", "scoutless.jedi.messages.MalformedMessage",
    "scoutless.layout.BundleError", "scoutless.layout.RegistryError",
    "scoutless.models.families.UnknownFamilyError", "scoutless.ops.impact_store.ImpactError",
    "scoutless.ops.rehearsal.RehearsalError", "scoutless.ops.retrain.RetrainError",
    "scoutless.replay.config.ReplayConfigError", "scoutless.replay.pool.PoolError",
    "scoutless.replay.workload.WorkloadError", "scoutless.service.request_input.InputError",
    "scoutless.service.request_input.InputErrors", "scoutless.sizing.report.SizingError",
    "scoutless.sources.common.TraceParseError", "scoutless.targets.bins.BinsError",
    "scoutless.training.run.TrainingError", "scoutless.training.walk_forward.WalkForwardError",
})  # fmt: skip


class UserError(Exception):
    """An error a verb words itself (it knows the file, the option that would help)."""


def trace_error(exc: Exception, skip_bad: bool) -> UserError:
    """A trace reader's error as one line, offering ``--skip-bad`` only for a malformed
    row it would skip (not for a missing column or an empty file, where it cannot help)."""
    hint = getattr(exc, "skippable", False) and not skip_bad
    return UserError(f"{message(exc)}" + ("; --skip-bad skips malformed lines" if hint else ""))


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of :data:`USER_ERRORS` (or a subclass of one)."""
    return any(f"{c.__module__}.{c.__qualname__}" in USER_ERRORS for c in type(exc).__mro__)


def _is_usage_error(exc: BaseException) -> bool:
    """A command line click (or Typer's copy of it) could not parse: its ``UsageError``."""
    return any(c.__name__ == "UsageError" for c in type(exc).__mro__)


def _place(loc: Sequence[Any]) -> str:
    """A validation error's place as a file's reader names it: ``item 0: coreCount``, not
    the HTTP body's ``body.taskparams.0.coreCount``."""
    parts = list(loc)
    if parts and parts[0] == "body":
        parts = parts[2:] if len(parts) > 1 and isinstance(parts[1], str) else parts[1:]
    return ": ".join(f"item {p}" if isinstance(p, int) else str(p) for p in parts)


def validation_line(errors: Sequence[tuple[Sequence[Any], str]], source: str = "") -> str:
    """Validation errors ``(loc, message)`` as one line, each prefixed by its place."""
    said = [": ".join(x for x in (_place(loc), msg) if x) for loc, msg in errors]
    return ": ".join(x for x in (source, "; ".join(said)) if x)


def message(exc: BaseException, source: str = "") -> str:
    """``exc`` as one line (validation errors named by place, within ``source``)."""
    if hasattr(exc, "errors") and callable(exc.errors):  # pydantic's ValidationError
        said = validation_line([(e["loc"], e["msg"]) for e in exc.errors()], source)
    elif isinstance(getattr(exc, "errors", None), list):  # InputErrors: each has loc, message
        said = validation_line([(e.loc, e.message) for e in exc.errors], source)
    elif hasattr(exc, "loc") and hasattr(exc, "message"):  # one InputError
        said = validation_line([(exc.loc, exc.message)], source)
    elif isinstance(exc, KeyError) and exc.args:  # str() of a KeyError is its repr
        said = str(exc.args[0])
    elif getattr(exc, "orig", None) is not None and hasattr(exc, "statement"):  # DBAPIError
        said = f"database: {exc.orig}"  # the driver's words (they name the host), no SQL
    elif isinstance(exc, OSError) and exc.filename is not None:
        said = f"{exc.filename}: {exc.strerror or exc}"
    else:
        said = str(exc) or type(exc).__name__
    return " ".join(said.split())


@contextmanager
def one_line_errors() -> Iterator[None]:
    """Run a verb: a user's error becomes one line on stderr and exit 2, a verb's usage error
    (a missing or malformed option) too, naming its ``--help``; a bug propagates."""
    try:
        yield
    except Exception as exc:
        if _is_usage_error(exc):
            ctx = getattr(exc, "ctx", None)
            where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            said = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            typer.echo(f"scoutless: error: {said}{where}", err=True)
            raise typer.Exit(code=USER_ERROR_EXIT) from exc
        if not is_user_error(exc):
            raise
        typer.echo(f"scoutless: error: {message(exc)}", err=True)
        raise typer.Exit(code=USER_ERROR_EXIT) from exc
