"""The ``zkpipe`` command's top-level parser: --version, and help that shows defaults and no markup.

It lives beside the server's commands (not in ``cli``) so that ``python -m pipeline.server`` builds
the same parser without importing upward.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys

DESCRIPTION = """Groth16 proofs from snarkjs files (.zkey, .wtns, .r1cs) on NVIDIA GPUs or the CPU.

exit codes: 0 success (or a valid proof), 1 an invalid proof or a failed job, 2 bad input or usage,
3 an internal error
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions kept as written; every option's help ends with its default when it has one."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # argparse makes a formatter for every add_argument (to check metavars) and imports shutil
        # (~2 ms with zlib, bz2, lzma) for the terminal's width: the same width, without shutil.
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, "", argparse.SUPPRESS) and action.option_strings \
                and "default" not in text:
            text += " (default: %(default)s)"
        return text


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: $COLUMNS, else the terminal of stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def version_text() -> str:
    import pipeline

    return f"zkpipe {pipeline.__version__} (Python {sys.version.split()[0]})"


def new_parser(prog: str = "zkpipe") -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The top-level parser (with --version) and its subcommand table; every parser uses HelpFormatter."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=functools.partial(argparse.ArgumentParser, formatter_class=HelpFormatter))
    return parser, sub
