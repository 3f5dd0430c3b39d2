"""``python -m pipeline.server serve|submit ...``: the server commands without the rest of the CLI."""
import sys

from .cli_commands import add_server_commands
from .cli_parser import new_parser


def main(argv=None) -> int:
    parser, sub = new_parser()
    add_server_commands(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
