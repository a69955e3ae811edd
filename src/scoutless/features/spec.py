"""Which columns a model may see: only what is known when a task is submitted.

A training table carries its own feature list (PanDA history and imported traces have
different ones); ``PANDA_FEATURES`` is the list for PanDA-compatible history.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

FeatureKind = Literal["categorical", "numerical"]


@dataclass(frozen=True)
class FeatureSpec:
    name: str
    kind: FeatureKind
    source: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("categorical", "numerical"):
            raise ValueError(f"{self.name}: kind={self.kind!r} must be categorical or numerical")

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> FeatureSpec:
        return cls(**d)  # type: ignore[arg-type]


def _cat(name: str, source: str, description: str = "") -> FeatureSpec:
    return FeatureSpec(name, "categorical", source, description)


def _num(name: str, source: str, description: str = "") -> FeatureSpec:
    return FeatureSpec(name, "numerical", source, description)


PANDA_FEATURES: tuple[FeatureSpec, ...] = (
    _cat("prodsourcelabel", "jedi_tasks", "managed (production) or user (analysis)"),
    _cat("tasktype", "jedi_tasks", "prod or anal"),
    _cat("processingtype", "jedi_tasks", "evgen, simul, pile, reco, deriv, merge, panda-client …"),
    _cat("transpath", "jedi_tasks", "transformation: Gen_tf.py, Sim_tf.py, runGen …"),
    _cat("transuses", "jedi_tasks", "software release, e.g. Atlas-21.0.77"),
    _cat("transhome", "jedi_tasks", "release cache, e.g. AthSimulation-21.0.77"),
    _cat("architecture", "jedi_tasks", "platform, e.g. x86_64-centos7-gcc8-opt"),
    _cat("campaign", "jedi_tasks", "MC16a, data18 …"),
    _cat("workqueue_id", "jedi_tasks"),
    _cat("gshare", "jedi_tasks", "global share"),
    _cat("username", "jedi_tasks"),
    _cat("site", "jedi_tasks", "site requested at submission (often empty)"),
    _cat("project", "jedi_tasks.taskname", "first dot-token of the task name: mc16_13TeV, user …"),
    _cat("ramunit", "jedi_tasks", "MBPerCore or MBPerCoreFixed"),
    _num("corecount", "jedi_tasks", "cores requested per job"),
    _num("baseramcount", "jedi_tasks", "MB not scaling with cores"),
    _num("basewalltime", "jedi_tasks", "s not scaling with CPU power"),
    _num("cpuefficiency", "jedi_tasks", "% as submitted"),
    _num("requested_ramcount", "jedi_taskparams.ramCount", "MB per core the submitter asked for"),
    _num("nevents_per_job", "jedi_taskparams.nEventsPerJob"),
    _num("nfiles_per_job", "jedi_taskparams.nFilesPerJob"),
    _num("n_input_datasets", "jedi_datasets", "master input datasets"),
    _num("input_nfiles", "jedi_datasets", "files in the input datasets"),
    _num("input_nevents", "jedi_datasets", "events in the input datasets"),
)

#: Columns measured after submission (or overwritten by scouts). None may be a feature.
MEASURED_COLUMNS: frozenset[str] = frozenset(
    {
        # jedi_tasks columns JEDI overwrites from scouts
        "ramcount", "cputime", "walltime", "iointensity", "diskio", "outdiskcount",
        "workdiskcount", "status", "modificationtime",
        # jobsarchived4 measurements
        "maxpss", "maxrss", "maxvmem", "avgpss", "avgrss", "cpuconsumptiontime", "starttime",
        "endtime", "nevents_processed", "outputfilebytes", "totrbytes", "totwbytes", "hs06sec",
        "jobstatus", "actualcorecount", "computingsite", "modificationhost", "attemptnr",
        "wall_time", "cpu_eff", "iobytesread", "iobyteswritten",
    }
)  # fmt: skip


def feature_names(specs: tuple[FeatureSpec, ...] | list[FeatureSpec]) -> list[str]:
    return [s.name for s in specs]
