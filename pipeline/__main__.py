"""``python3 -m pipeline ...`` is the ``zkpipe`` command (for when the console script is not on PATH)."""
import sys

from .cli import main

sys.exit(main())
