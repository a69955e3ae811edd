"""Paths of the real trace excerpts in tests/data/traces (see its README)."""

from __future__ import annotations

from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
SACCT_TXT_COLUMNS = [
    "JobID",
    "JobName",
    "User",
    "Partition",
    "NodeList",
    "NNodes",
    "NCPUs",
    "NTasks",
    "State",
    "Submit",
    "Start",
    "End",
    "Timelimit",
    "Elapsed",
    "TotalCPU",
    "CPUTime",
    "UserCPU",
    "SystemCPU",
    "ReqMem",
    "MaxRSS",
    "MaxVMSize",
    "ReqTRES",
    "AllocTRES",
    "TRESUsageInMax",
    "TRESUsageInTot",
    "TRESUsageOutTot",
    "MaxDiskRead",
    "MaxDiskWrite",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "Comment",
]
XDMOD_COLUMNS = [
    "jobid",
    "jobidraw",
    "cluster",
    "partition",
    "qos",
    "account",
    "group",
    "gid",
    "user",
    "uid",
    "submit",
    "eligible",
    "start",
    "end",
    "elapsed",
    "exitcode",
    "state",
    "nnodes",
    "ncpus",
    "reqcpus",
    "reqmem",
    "reqtres",
    "alloctres",
    "timelimit",
    "nodelist",
    "jobname",
]


@pytest.fixture
def traces() -> Path:
    return TRACES


@pytest.fixture
def sacct_txt_columns() -> list[str]:
    return list(SACCT_TXT_COLUMNS)


@pytest.fixture
def xdmod_columns() -> list[str]:
    return list(XDMOD_COLUMNS)
