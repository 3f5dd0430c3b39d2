"""The one error type for bad input files: it names the file, what was expected and what was found."""

from ..errors import BadInput


class FormatError(BadInput):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.reason = message
