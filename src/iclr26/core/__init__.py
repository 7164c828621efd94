"""The harness: paper registry, claims and verdicts, run folders, the report."""

from .claims import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_RUN,
    REPRODUCED,
    Check,
    Claim,
    MissingMetricError,
    aggregate,
    verdict,
)
from .errors import UserError
from .folders import latest_run, status_of
from .registry import PAPERS, PaperCard, UnknownPaperError, get_paper, reproducible
from .runs import RunContext, run_paper

__all__ = [
    "Check",
    "Claim",
    "aggregate",
    "verdict",
    "REPRODUCED",
    "NOT_REPRODUCED",
    "INCONCLUSIVE",
    "NOT_RUN",
    "MissingMetricError",
    "UserError",
    "PAPERS",
    "PaperCard",
    "UnknownPaperError",
    "get_paper",
    "reproducible",
    "RunContext",
    "run_paper",
    "latest_run",
    "status_of",
]
