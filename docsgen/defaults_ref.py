"""The defaults of every entry point, in one table, read from ``scoutless.config`` and the
client's signatures at build time (a changed default changes the page)."""

from __future__ import annotations

import inspect

from docsgen.markdown import code, table

INTRO = """\
# Defaults of every entry point

What each way of asking scoutless does when it is not told. Every entry point reads the
one default policy, `allocation.default_policy` (environment
`SCOUTLESS_ALLOCATION__DEFAULT_POLICY`), and the one `alpha`, `allocation.alpha`
(`SCOUTLESS_ALLOCATION__ALPHA`), unless its own setting is given. `alpha` is read only by
the policies `risk` and `value`: given with any other policy it is refused (HTTP 422
naming `alpha`, exit code 2 on the command line). What each answer field means:
[the answer](../concepts/answer.md).

"""

WHY = """
## Why `cost` (the shipped default)

`cost` allocates each task the value with the least expected cost at the site and decides,
per task, whether scouting is cheaper (a task of an application the model never saw is
always scouted). It is the one policy whose answer carries its own scout decision, so a
listener that may skip scouts (`listener.skip_scout_policies`) skips them only where
predicting is the cheaper choice; `value` and the class policies would skip them for every
eligible task. The replay measures `cost` by default, so the figures the results pages show
are the ones the service answers.
"""


def defaults_page() -> str:
    from scoutless.client import Client
    from scoutless.config import AllocationSettings, ListenerSettings, ReplaySettings
    from scoutless.ops.rollout import default_state

    # the sections' own defaults, not this machine's environment
    allocation, listener, replay = AllocationSettings(), ListenerSettings(), ReplaySettings()
    rollout_mode = default_state().mode
    policy = f"{code(allocation.default_policy)} (`allocation.default_policy`)"
    client = inspect.signature(Client.predict).parameters["policy"].default
    rows = [
        ("`POST /v1/predict`, `GET /v1/tasks/{id}/prediction` (`scoutless serve`)", policy,
         f"`service.default_alpha`, unset: {allocation.alpha} (`allocation.alpha`)", "—: `scout` in the answer under cost"),
        ("`scoutless listen`", f"`listener.policy`, unset: {policy}",
         f"`listener.alpha`, unset: {allocation.alpha} (`allocation.alpha`)",
         f"rollout mode {code(rollout_mode)} while no `scoutless rollout set` has been made; "
         f"may skip under {', '.join(listener.skip_scout_policies)}"),
        ("`scoutless taskparams`", f"`listener.policy`, unset: {policy}",
         f"`listener.alpha`, unset: {allocation.alpha} (`allocation.alpha`)", "as the listener (the same rollout row)"),
        ("`scoutless.client.Client` / `AsyncClient`",
         "the server's" if client is None else code(client), "the server's",
         "`fill_taskparams`: as the answer's policy"),
        ("`scoutless replay`", f"`replay.policy`, unset: {policy}",
         f"`replay.alpha`, unset: {allocation.alpha} (`allocation.alpha`)",
         f"strategies {', '.join(replay.strategies)}"),
    ]  # fmt: skip
    headers = ["entry point", "policy", "alpha (risk, value)", "scouts"]
    return INTRO + table(headers, rows) + WHY
