"""Which benchmarks have a results page: the catalogue, each entry with its command and
the view that lays its JSON out as tables (``docsgen/views/``, one module per area).

A benchmark without a view gets every figure of its JSON in one table; a view only
chooses which figures sit side by side.
"""

from __future__ import annotations

from docsgen.results_pages import Benchmark
from docsgen.views.atlas import atlas_jobs_tables
from docsgen.views.models import (
    fast_paths_tables,
    real_traces_tables,
    train_tables,
    values_tables,
    xgb_inference_tables,
)
from docsgen.views.replay import canary_tables, realism_tables, replay_tables
from docsgen.views.service import db_paths_tables, serve_tables
from docsgen.views.sizing import (
    online_restart_tables,
    online_tables,
    sizing_cap_tables,
    sizing_reference_tables,
    sizing_refresh_tables,
    sizing_tables,
)

BENCHMARKS: list[Benchmark] = [
    Benchmark(
        "train",
        "Model quality and training time",
        "Accuracy and macro-F1 of every model family on the random test split of a "
        "synthetic PanDA history, next to the Bayes limit, and the training time.",
        "python benchmarks/train.py --tasks 20000 --out results/train.json",
        train_tables,
    ),
    Benchmark(
        "real_traces",
        "Real traces, walk-forward",
        "Real job logs (Parallel Workloads Archive, ATLAS PanDA job records) imported as "
        "`scoutless import` does and scored walk-forward, retrained weekly, against the "
        "baselines schedulers use today.",
        "python benchmarks/real_traces.py --seeds 42 --out results/real_traces.json",
        real_traces_tables,
    ),
    Benchmark(
        "replay",
        "Replay: scouts against predictions, on the clock",
        "The same history through the scouts, predicted, hybrid, selective, bayes and "
        "oracle strategies on a simulated clock under PanDA's rules, per demo size and "
        "replay seed: time to the first production job, completion, kills, wasted "
        "core-hours, slack, and each strategy's priced total (the strategies ranked by "
        "it); the checks: the hybrid against the scouts on every metric, oracle and bayes "
        "bounding on the priced total. (`--tasks` without `--sizes`: the replay's own speed.)",
        "python benchmarks/replay.py --sizes 50000,20000,5000 --seeds 3 --workdir scoutless-work/bench "
        "--out results/replay.json",
        replay_tables,
    ),
    Benchmark(
        "replay_online",
        "Replay: every job sized online",
        "The online strategy (every job sized from its task's outcomes so far, memory and "
        "walltime, from the hybrid's prediction on; JEDI's re-tuning and memory retry beside "
        "it) against the hybrid, the scouts and the oracle on the same demos and replay "
        "seeds, per size (50k and 20k merged with `--merge`; the 20k small pool, "
        "`--utilisation 0.8`, in `results/replay_online_20k_small_pool.json`); the checks: the goals "
        "against the hybrid (`online_vs_hybrid`, each a ratio of the means) and the "
        "leakage guard, oracle ≤ online on the priced total within the seeds' spread.",
        "python benchmarks/replay_online.py --sizes 50000,20000 --seeds 3 "
        "--out results/replay_online.json",
        replay_tables,
    ),
    Benchmark(
        "serve",
        "Service latency and throughput",
        "The HTTP service under load on one machine: the database endpoint, single-task "
        "and 1,000-task POSTs, against the service's goals. The load generator shares the "
        "machine, and every answer waits for its prediction-log commit. Without `--bundle` "
        "and `--db` the benchmark trains a small bundle and serves a small generated history; "
        "`--bundle scoutless-work/bundle --db sqlite:///scoutless-work/history.sqlite` "
        "measures the demo's. `vs_bare` compares the service (token required, log on) with "
        "a bare FastAPI app under the same client, servers and client pinned to their own "
        "core: the ratios of throughput and p99, on SQLite and PostgreSQL.",
        "python benchmarks/serve.py --workers 2 --vs-bare --pg-url $SCOUTLESS_BENCH_PG_URL "
        "--out results/serve.json",
        serve_tables,
    ),
    Benchmark(
        "hostile",
        "The service against a hostile caller",
        "One caller with a token against everyone else, on loopback, the default limits: "
        "64 stalled uploads then 450 good requests (the share refused); four clients "
        "sending bodies of 2.1 million tiny tasks, then of 20 million empty arrays in "
        "`targets`, for 5 s each (the server's peak memory growth and `/healthz` "
        "meanwhile); a real 10,000-task batch; and 300 connections that never finish a "
        "request head (closed by the head timeout).",
        "python benchmarks/hostile.py --out results/hostile.json",
    ),
    Benchmark(
        "db_paths",
        "The service's database work per request",
        "A task's read by id and its prediction-log insert, per request at groups of 1, 4 "
        "and 8 requests, on SQLite and PostgreSQL: the previous per-task read and "
        "transaction against the grouped read (one statement per group on PostgreSQL) and "
        "the one-round-trip insert, run in turns in one process.",
        "python benchmarks/db_paths.py --pg-url $SCOUTLESS_BENCH_PG_URL --out results/db_paths.json",
        db_paths_tables,
    ),
    Benchmark(
        "listen",
        "PanDA listener end to end",
        "Tasks published as JEDI's status messages over STOMP, predicted by the listener "
        "and applied by the JEDI plugin: lost, duplicated and the latency to the row.",
        "python benchmarks/listen.py --rate 10 --seconds 30 --out results/listen.json",
    ),
    Benchmark(
        "follow_jobs",
        "The job follower under load",
        "Ended jobs of sized tasks inserted into PanDA's jobsarchived4 at 20 a second (one "
        "in ten failed for memory), each with its job_status message: seconds from the row's "
        "commit to the follower's ledger row, learnt outcome and ramCount writes committed, "
        "woken by the messages and polling alone; jobs lost and handled twice.",
        "python benchmarks/follow_jobs.py --out results/follow_jobs.json",
    ),
    Benchmark(
        "realism",
        "Synthetic scouts against real ones",
        "How far a task's scouts are from the whole task, on real ATLAS tasks and on the "
        "synthetic generator: the replay is only as honest as the scouts it replays.",
        "python benchmarks/realism.py --tasks 20000 --out results/realism.json",
        realism_tables,
    ),
    Benchmark(
        "promise",
        "The promise kept under a release drift",
        "A bundle trained before a new release raises memory 1.75x for some processing "
        "types, predicting after it with the value policy at alpha: the realised "
        "under-allocation per group, the groups `monitor promise` flags, and the next "
        "window with the calibration refitted on the first.",
        "python benchmarks/promise.py --tasks 8000 --out results/promise.json",
    ),
    Benchmark(
        "canary",
        "A rollout rehearsed on the replay",
        "The replay's canary (share 0.5) written as PanDA's records with `replay "
        "--write-history` and read back by `monitor impact`, at two sizes: the largest "
        "relative gap between the impact's per-arm figures and the replay's own, and how "
        "the bootstrap intervals of canary − control narrow with 4x the tasks; per canary "
        "arm (selective, online, and control: an A/A rehearsal), and the online arm's "
        "memory kills per job against the A/A rehearsal's half-width (the same at 5,000 and "
        "20,000 tasks: `--tasks 5000 20000`, in `results/canary_20k.json`).",
        "python benchmarks/canary.py --tasks 2000 8000 --arms selective online control "
        "--out results/canary.json",
        canary_tables,
    ),
    Benchmark(
        "sizing",
        "Online sizing against the published allocators",
        "Sizey's six real nf-core traces under the peers' protocol (per task type 30 % "
        "history, 70 % sized online in `train_test_split`'s order; a failed attempt costs "
        "its whole allocation × runtime and is retried): scoutless's engine against every "
        "online baseline — Witt's percentile, regression and low-wastage regression, "
        "Tovar's, the users' presets, JEDI and VPA — for ten seeds, the median ratio over "
        "the workflow-seed cells with its bootstrap interval; sized cold, from the other "
        "five workflows only; under the live protocol; and over the constants' grid.",
        "python benchmarks/sizing.py TRACES_DIR --out results/sizing.json",
        sizing_tables,
    ),
    Benchmark(
        "atlas_jobs",
        "Real ATLAS jobs sized job by job",
        "Six ATLAS tasks' job records in pandaid order, each job's memory sized by "
        "scoutless's online sizer (no prior: the task's first recorded minramcount is the "
        "request; a job's outcome known only once the next 100 jobs were released; a kill "
        "retried from the conditional distribution), by the minramcount JEDI recorded "
        "(then JEDI's ladder) and by JEDI's ladder alone; a job dies where maxPSS > factor "
        "× its allocation. Beside the strict limit's goal, what it allows whatever sizes "
        "the task: the waste of the lag's window, sized from the request alone, and the best "
        "constant first allocation and retry in hindsight after it. Then the same tasks "
        "under the peers' protocol against the jedi baseline.",
        "python benchmarks/atlas_jobs.py --out results/atlas_jobs.json",
        atlas_jobs_tables,
    ),
    Benchmark(
        "online",
        "The online sizer's cost at scale",
        "A synthetic stream of jobs over tasks and task types sized by the online sizer "
        "through its protocol (first; each kill learnt as a censored outcome and retried; "
        "the outcome learnt), each type holding at most `max_outcomes_per_type` outcomes: "
        "CPU time per job, decision and update together, on one core; the process's "
        "resident memory; and the bytes of each type's state as its outcomes accumulate. "
        "The commit measured is in the JSON.",
        "python benchmarks/online.py --jobs 1000000 --tasks 10000 --types 100 "
        "--out results/online.json",
        online_tables,
    ),
    Benchmark(
        "sizing_cap",
        "What bounding a type's state costs in wastage",
        "scoutless's online sizer on Sizey's six nf-core traces under the peers' protocol "
        "(the `scoutless` row of the sizing benchmark) with every outcome kept, with the "
        "default cap on outcomes per type and with a cap of 128 that binds on every large "
        "type: wastage and failures per workflow and seed, and each cap's wastage over the "
        "uncapped one's (goal: the default within 2 %, 128 within 5 %).",
        "python benchmarks/sizing_cap.py TRACES_DIR --seeds 1996,2023,42 "
        "--out results/sizing_cap.json",
        sizing_cap_tables,
    ),
    Benchmark(
        "sizing_refresh",
        "What refreshing a type's samples less often costs",
        "scoutless's online sizer on Sizey's six nf-core traces under the peers' protocol, "
        "each type's residual samples rebuilt at every outcome (share 0, the engine before "
        "this change) and at the default `sample_refresh_share` (rebuilt once the outcomes "
        "since the anchor reach that share of the type's; between rebuilds new outcomes "
        "join with the models' residuals as fitted at the anchor): wastage, failures and "
        "the walk's CPU time (goal: wastage within 2 % on every cell).",
        "python benchmarks/sizing_refresh.py TRACES_DIR --seeds 1996,2023,42 "
        "--out results/sizing_refresh.json",
        sizing_refresh_tables,
    ),
    Benchmark(
        "sizing_reference",
        "What the engine's models reach knowing the rest of the stream",
        "scoutless's online sizer on Sizey's six nf-core traces (memory, the peers' "
        "protocol, at the sizing benchmark's ten seeds) beside the same sizer with the outcomes of "
        "the rest of each type's online stream known up front: the instances dealt into k "
        "folds by position (k) or in k contiguous stretches (b), each fold sized knowing "
        "every other fold and learning nothing, so no instance is sized knowing its own "
        "outcome. Each ÷ the best "
        "baseline of the same cell. The gap between online and k = 5 is what the learning "
        "curve costs (what the stream has not yet revealed when an instance is sized); "
        "what is left at k = 5 is the models'. At k = 2 a fold knows, on average, as much "
        "as the online sizer does when it sizes an instance. A reference, not a bound.",
        "python benchmarks/sizing_reference.py TRACES_DIR --folds 2,5 --block-folds 5 "
        "--jobs 2 --out results/sizing_reference.json",
        sizing_reference_tables,
    ),
    Benchmark(
        "instance_read",
        "What reading an instance table strictly costs",
        "`scoutless size` reads its instance table strictly: every row's field count and "
        "every numeric cell checked, a malformed row named by its line. Sizey's six traces "
        "concatenated into one CSV, read that way (pandas' C reader where every row is one "
        "line; the csv module where a quoted field may span lines) and by pandas' plain "
        "read_csv, which checks nothing: least seconds of each, the ratio, and whether the "
        "two strict paths read the same numbers (they must).",
        "python benchmarks/instance_read.py TRACES_DIR --copies 20 --out results/instance_read.json",
    ),
    Benchmark(
        "lwr_speed",
        "What a fit of Witt's low-wastage regression costs",
        "The fits the online low-wastage regression makes on one workflow at one seed, each "
        "run with SciPy's COBYLA as it is and without its constraint work (there are none), "
        "in turn: seconds per way, and whether the fitted lines are identical (they must be).",
        "python benchmarks/lwr_speed.py TRACES_DIR --workflow iwd --seed 1996 "
        "--out results/lwr_speed.json",
    ),
    Benchmark(
        "online_restart",
        "The online sizer's state across restarts",
        "A recorded stream of outcomes learnt through the persistent sizer on SQLite, its "
        "process SIGKILLed at random points and restarted from the database each time, "
        "against an uninterrupted run: every allocation must be identical. Beside it, what "
        "keeping the state in the database costs per learn and per allocation, against the "
        "in-memory sizer (and PostgreSQL where `--pg` names one).",
        "python benchmarks/online_restart.py --outcomes 100000 --types 100 --kills 10 "
        "--out results/online_restart.json",
        online_restart_tables,
    ),
    Benchmark(
        "generate",
        "Synthetic history generation",
        "Throughput of the synthetic PanDA history generator writing into SQLite.",
        "python benchmarks/generate.py --tasks 50000 --out results/generate.json",
    ),
    Benchmark(
        "targets",
        "Target computation",
        "The four target estimators (PanDA's rules) over job rows, all jobs and scouts only.",
        "python benchmarks/targets.py --jobs 2000000 --out results/targets.json",
    ),
    Benchmark(
        "xgb_inference",
        "XGBoost inference for a few rows",
        "The tree walker (numpy, and compiled as the service runs it) against XGBoost's "
        "inplace_predict, per call.",
        "python benchmarks/xgb_inference.py --out results/xgb_inference.json",
        xgb_inference_tables,
    ),
    Benchmark(
        "fast_paths",
        "Small paths of a served request",
        "Each computation's small path (plain Python floats, no pandas) against its numpy "
        "definition, per call, at a served request's sizes (`scoutless.fast_paths`).",
        "python benchmarks/fast_paths.py --out results/fast_paths.json",
        fast_paths_tables,
    ),
    Benchmark(
        "scale",
        "Scale-out on Dask",
        "The Dask build of a Parquet export: wall time, worker memory, spill, and exactness "
        "against the single-process code. The export comes first: `python "
        "benchmarks/scale.py export --tasks N --export DIR`.",
        "python benchmarks/scale.py outofcore --export scale-work/export --out results/scale.json",
    ),
    Benchmark(
        "cli_startup",
        "Command-line start-up",
        "How long `scoutless --help`, `--version`, each verb's and sub-verb's `--help` and "
        "a wrong `--bundle` path take, as the median of fresh interpreters, against `python "
        '-c "import typer"` run in turns with them (goal: every `--help` within 2x; the '
        "worst and the median verb's ratio are shown, in wall time and, steadier on a shared "
        "machine, in CPU time (`cpu_…`)). Verbs are imported when they run, "
        "so no help imports torch, scikit-learn, XGBoost, pandas, rich or the settings "
        "(pydantic). Then `scoutless taskparams` filling one task from a demo's bundle of "
        "every family (goal: within 2 s; it reads the models as arrays, without torch or "
        "XGBoost).",
        "python benchmarks/cli_startup.py --repeats 5 --out results/cli_startup.json",
    ),
    Benchmark(
        "values",
        "Values at the Bayes limit, per demo size",
        "The served value (the bundle's value model, calibrated) on a demo's test tasks "
        "against the Bayes value from the generator's truth, at equal under-allocation "
        "(goal: ≤ 1.05× at 20k tasks, ≤ 1.03× at 200k). The demos are the replay "
        "benchmark's and one 200k demo.",
        "python benchmarks/values.py --demos W/demo_20000_42,W/demo_50000_42,"
        "W/demo_200000_42 --out results/values.json",
        values_tables,
    ),
    Benchmark(
        "parity",
        "One decision everywhere",
        "For 1,000 test tasks of a demo, the allocation the service answers by id and "
        "posted as task parameters, the one `taskparams` writes, the one the listener "
        "publishes and the one the replay's predicted strategy allocates, compared value for "
        "value under the cost policy, with the default settings (the rooms at the loads the "
        "bundle learnt) and with a settings file that prices each resource type, caps each "
        "target's kills and sets the rooms' loads (goal: 0 mismatches).",
        "python benchmarks/parity.py --workdir W --tasks 1000 --out results/parity.json",
    ),
    Benchmark(
        "decision_speed",
        "The decision's speed, paired",
        "Two checkouts on one machine, in interleaved runs (A B, B A, …) on the same small "
        "demo: the service's CPU per request (one task by id, one posted, under the cost "
        "policy) and the replay's time through every strategy; per pair the ratio after ÷ "
        "before, its median and its spread over the pairs (goal: 1 within the spread).",
        "python benchmarks/decision_speed.py --before B --after . --tasks 2000 --rounds 4 "
        "--out results/decision_speed.json",
    ),
]
