"""Words for time on a wall clock as progress lines show it (elapsed, ETA): '45s', '3m05s',
'2h04m', short enough for a line that is redrawn."""

from __future__ import annotations


def duration_text(seconds: float) -> str:
    """'45s', '3m05s', '2h04m' (whole seconds; below 0 reads 0s)."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
