"""The aiohttp HTTP service: ``create_app(config)``; ``zkpipe serve`` runs it (``cli_commands``).

``create_app`` is imported on first use, so that ``pipeline.server.cli_commands`` (the CLI's
``serve`` and ``submit`` parsers) can be imported by every ``zkpipe`` command without aiohttp.
"""
__all__ = ["create_app"]


def __getattr__(name: str):
    if name == "create_app":
        from .app import create_app

        return create_app
    raise AttributeError(name)
