"""US dollar amounts as the front ends print them (``/cost``, ``/sessions``, ``agent usage``)."""

from __future__ import annotations


def format_usd(amount: float | None) -> str:
    """``$0.00`` for zero, four decimals below one cent, else two; ``unpriced`` for None."""
    if amount is None:
        return "unpriced"
    if amount == 0:
        return "$0.00"
    if abs(amount) < 0.01:
        return f"${amount:.4f}"
    return f"${amount:.2f}"
