"""One typed settings object: every default scoutless uses lives in this package.

Each layer's section sits in its own module (``config/replay.py`` the replay's knobs,
``config/service.py`` the service's, …); ``config/settings.py`` assembles them into the one
``Settings`` and reads it from (highest first) explicit arguments, ``SCOUTLESS_*``
environment variables (nested with ``__``, e.g. ``SCOUTLESS_PANDA__CPU_EFFICIENCY_PERCENT=80``),
the settings file that ``SCOUTLESS_CONFIG`` names (``scoutless --config FILE``), then the
defaults. This module is the package's public face: import from ``scoutless.config``.
"""

from scoutless.config.allocation import AllocationSettings, Prices
from scoutless.config.distributed import DistributedSettings
from scoutless.config.history import HistorySettings
from scoutless.config.job_follower import JobFollowerSettings
from scoutless.config.listener import ListenerSettings, RolloutSettings
from scoutless.config.panda import PandaDefaults, TargetSettings
from scoutless.config.replay import (
    EXTRA_STRATEGY_NAMES,
    REPLAY_POLICIES,
    STRATEGY_NAMES,
    CanaryHarm,
    ReplaySettings,
    ResourceType,
)
from scoutless.config.service import InferenceSettings, ServiceSettings
from scoutless.config.settings import (
    CONFIG_ENV,
    PANDA_SCHEMA,
    BadDatabaseUrl,
    Settings,
    SettingsEnvError,
    SettingsFileError,
    get_settings,
    masked_url,
    parse_db_url,
    settings_file,
    updated,
    with_password,
)
from scoutless.config.sizing import SizingSettings
from scoutless.config.sizing_state import SizingStateSettings
from scoutless.config.training import SplitSettings, TrainingSettings, WithinTaskSettings

__all__ = [
    "CONFIG_ENV",
    "EXTRA_STRATEGY_NAMES",
    "PANDA_SCHEMA",
    "REPLAY_POLICIES",
    "STRATEGY_NAMES",
    "AllocationSettings",
    "BadDatabaseUrl",
    "CanaryHarm",
    "DistributedSettings",
    "HistorySettings",
    "InferenceSettings",
    "JobFollowerSettings",
    "ListenerSettings",
    "PandaDefaults",
    "Prices",
    "ReplaySettings",
    "ResourceType",
    "RolloutSettings",
    "ServiceSettings",
    "Settings",
    "SettingsEnvError",
    "SettingsFileError",
    "SizingSettings",
    "SizingStateSettings",
    "SplitSettings",
    "TargetSettings",
    "TrainingSettings",
    "WithinTaskSettings",
    "get_settings",
    "masked_url",
    "parse_db_url",
    "settings_file",
    "updated",
    "with_password",
]
