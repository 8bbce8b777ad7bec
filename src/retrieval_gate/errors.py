"""Named errors. Adapters and loaders raise these; the shell (CLI / action) turns them
into messages and exit codes. Nothing here prints or exits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none), for messages
    that wrap a library's error."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with one input, located as precisely as we can."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


class RetrievalGateError(Exception):
    """Base of every error a user can cause. Exit code 2 unless a subclass says otherwise."""

    exit_code = 2


class ProblemsError(RetrievalGateError):
    """An error that carries located problems (``file:line: what``), every one found, not just
    the first. The CLI prints one line per problem."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem(path="", line=None, message=problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class InputError(ProblemsError):
    """One or more problems in the user's files (a bad line, a missing file, a wrong value)."""


class OutputError(ProblemsError):
    """A file or folder the tool could not write or lock (no space left, no permission, a path
    that is not a folder): the inputs are fine. Exit 2, as bad input: the run could not finish."""


class UsageError(RetrievalGateError):
    """A bad flag, option value or combination of them."""


class EmbedderError(RetrievalGateError):
    """The embedding model could not be loaded or used."""


class NeedsTorchError(EmbedderError):
    """The run asks for something only torch (sentence-transformers) runs — a model without a
    checked ONNX export, the cross-encoder rerank — and this installation has no torch: the
    action's default image. The message names the full image variant, in one line."""


class StoreError(RetrievalGateError):
    """The vector store could not be opened, built or queried."""


class RetrieverError(RetrievalGateError):
    """A retriever could not be built (per-query failures are counted, not raised)."""


class MeasurementError(RetrievalGateError):
    """A measure that cannot be computed on this input (e.g. its denominator is empty). Raised
    instead of reporting a reassuring 0."""


class BaselineError(RetrievalGateError):
    """A baseline file that cannot be read, migrated or written."""


class HistoryError(RetrievalGateError):
    """The repository's history of a baseline cannot be read: not a git repository, a shallow
    clone, git missing or past its deadline (``retrieval-gate history``)."""


class ForgeError(RetrievalGateError):
    """A forge's API (GitHub, GitLab, Azure DevOps: ``forge/``) refused or failed. Messages never contain the token."""


class ConflictError(ForgeError):
    """A write was rejected because the branch or file changed since it was read (HTTP 409/422;
    Azure DevOps: a stale old object id)."""


class PermissionDenied(ForgeError):
    """The token may not do this (HTTP 403 that is not a rate limit), e.g. a fork PR's read-only
    token, or no token at all."""


class InternalError(Exception):
    """A bug caught where the secrets it might show are known (the action): ``cli.main`` reports the
    exception it wraps (``__cause__``) as every other bug — one line, exit 3 — with its text passed
    through ``clean``. Not a RetrievalGateError: the user did nothing wrong."""

    def __init__(self, clean: Callable[[str], str]) -> None:
        super().__init__("internal error")
        self.clean = clean
