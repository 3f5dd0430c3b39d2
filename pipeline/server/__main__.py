"""``python -m pipeline.server serve|submit ...``: the server commands without the rest of the CLI."""
import argparse
import sys

from .cli_commands import add_server_commands


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="zkpipe")
    add_server_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
