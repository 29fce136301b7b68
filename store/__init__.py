"""SQLite persistence for tidings (to be filled)."""

__all__: list[str] = []
