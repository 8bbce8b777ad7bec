"""What the action's flows receive: the forge (``forge.base.Forge``: its words, limits, URLs) and
a factory of its API adapter (``forge.base.ForgeApi``), the context they run in, and the outcome
they return. Tests pass a real adapter against a fake API, or fakes of these interfaces."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from retrieval_gate.clock import now_iso
from retrieval_gate.errors import UsageError
from retrieval_gate.files import write_text_atomic
from retrieval_gate.forge import forge_named
from retrieval_gate.forge.base import Forge, ForgeApi
from retrieval_gate.publish.action_settings import ActionSettings
from retrieval_gate.publish.engine import Engine
from retrieval_gate.publish.runner import Runner
from retrieval_gate.publish.untrusted import scrub_text

MAX_WRITE_ATTEMPTS = 5


@dataclass
class Outcome:
    """What a flow did: the mode, the exit code and the step outputs."""

    mode: str
    exit_code: int
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class FlowContext:
    """Everything a flow touches, passed in: settings, engine, the forge API's factory, runner, clock, sleep."""

    settings: ActionSettings
    engine: Engine
    forge_api: Callable[[], ForgeApi]
    runner: Runner
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], str] = now_iso
    jitter: Callable[[], float] = random.random
    max_attempts: int = MAX_WRITE_ATTEMPTS
    _api: ForgeApi | None = None

    def scrub(self, text: str) -> str:
        """``text`` without the token, the ACTIONS_* values or the config's secret header values."""
        return scrub_text(text, secrets=self.settings.secret_values)

    def write_text(self, path: Path, text: str) -> None:
        """Every file a flow writes goes through here: scrubbed, then written atomically."""
        write_text_atomic(path, text=self.scrub(text))

    @property
    def forge(self) -> Forge:
        """The forge this run is on (its words, limits and URLs)."""
        return forge_named(self.settings.place.forge)

    def api(self) -> ForgeApi:
        if self._api is None:
            if not self.settings.repository:
                raise UsageError(f"no repository is set ({self.forge.title}'s variables are missing): the pr, "
                                 "update-baseline and comment modes need the forge's API (run inside its pipeline, "
                                 "or use mode: report)")
            self._api = self.forge_api()
        return self._api
