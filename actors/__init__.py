"""tidings.actors."""

__all__: list[str] = []
