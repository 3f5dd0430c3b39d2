"""The one error tree of zkpipe, and the command line's exit codes.

    ZkpipeError                     everything zkpipe raises on purpose
    ├── BadInput                    the caller's fault: files, witnesses, inputs, requests, config
    ├── Unavailable                 a resource is missing or exhausted (no GPU, budget, stopped engine)
    └── InternalError               our bug or a broken environment (a failed kernel, a dead worker)

The pipeline, the server and the CLI decide "the caller's fault" vs "ours" from this tree alone,
never from builtin base classes: a stray ``KeyError`` from a bug is an internal error, not bad
input. ``BadInput`` also derives from ``ValueError`` so that library users who catch the builtin
keep working; nothing inside zkpipe relies on that.

This module imports nothing of the project: every layer may import it.
"""
from __future__ import annotations

import enum


class ZkpipeError(Exception):
    """Root of every error zkpipe raises on purpose."""


class BadInput(ZkpipeError, ValueError):
    """Something the caller handed us cannot be used; the message names what and where."""


class Unavailable(ZkpipeError):
    """A resource the work needs is missing or exhausted; retrying elsewhere or later may work."""


class InternalError(ZkpipeError, RuntimeError):
    """Our bug or a broken environment: logged with its traceback, reported without blaming the caller."""


class ExitCode(enum.IntEnum):
    """What ``zkpipe`` returns; the docs and every subcommand use these names."""

    OK = 0  # success, or a valid proof
    INVALID = 1  # ``verify``: the proof does not verify; ``submit``: the job failed
    BAD_INPUT = 2  # bad input or usage, or an unavailable resource the user must provide (a GPU)
    INTERNAL = 3  # an internal error (a bug): the message says where to look


def is_callers_fault(exc: BaseException) -> bool:
    """True when ``exc`` is the caller's fault (bad input), by the error tree alone."""
    return isinstance(exc, BadInput)


def fault_code(exc: BaseException) -> str:
    """A stable snake_case code for a failure: ``bad_input``, ``unavailable`` or ``internal_error``."""
    if isinstance(exc, BadInput):
        return "bad_input"
    if isinstance(exc, Unavailable):
        return "unavailable"
    return "internal_error"
