"""The harness: paper registry, claims and verdicts, run folders, the report."""

from .claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Check, Claim, aggregate, verdict
from .registry import PAPERS, PaperCard, UnknownPaperError, get_paper, reproducible
from .runs import RunContext, latest_run, run_paper, status_of

__all__ = [
    "Check",
    "Claim",
    "aggregate",
    "verdict",
    "REPRODUCED",
    "NOT_REPRODUCED",
    "INCONCLUSIVE",
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
