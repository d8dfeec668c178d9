"""The producer's own replay of a certificate before its verdict is printed: "no verdict without a certificate that
replays" (issue of trust, certificates/FORMAT.md). The certificate is replayed in process by the independent
checker, ``certsym_check``, exactly as an auditor would replay it (bound to the model files when it references
them), so every bound the checker states (sizes, tree shapes, the work budget) is applied, not re-implemented here.
Cost: the checker's replay of the certificate, which its bounds limit (about 20 s of exact arithmetic at most).
"""

from __future__ import annotations

from collections.abc import Sequence


def replay_failure(doc: dict, files: Sequence[str] | None = None) -> str | None:
    """The checker's reason for refusing ``doc`` (replayed with the model ``files`` when given, as
    ``certsym check --inputs`` would), or None when it replays VALID. Never raises: a refusal is a reason."""
    from certsym_check import check  # the checker's start-up (mpmath for the landscape kinds) only when asked

    report = check(doc, list(files) if files else None)
    return None if report.valid else report.reason or "refused without a reason"


def replay_share(doc: dict) -> float | None:
    """The share of the checker's work budget that replaying ``doc`` (embedded inputs) takes, or None when the checker
    refuses it: what a search calibrates its tree against, so that the certificate it builds still replays. Cost:
    the replay."""
    from certsym_check import check
    from certsym_check.budget import WORK_BUDGET

    report = check(doc)
    return report.work / WORK_BUDGET if report.valid else None
