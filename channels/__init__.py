"""tidings.channels."""

__all__: list[str] = []
