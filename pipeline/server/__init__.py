"""The aiohttp HTTP service: ``create_app(config)``; ``zkpipe serve`` runs it (``cli_commands``)."""
from .app import create_app

__all__ = ["create_app"]
