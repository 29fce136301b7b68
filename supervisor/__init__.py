"""tidings.supervisor."""

__all__: list[str] = []
