"""public_message: file names stay, the server's folders go."""
from __future__ import annotations

import pytest

from pipeline.server.messages import public_message


@pytest.mark.parametrize("text, public", [
    ("partition 0, stage synthesize: /var/lib/zkpipe/keys/chain_bn128.wasm: 'x' is not an input signal",
     "partition 0, stage synthesize: chain_bn128.wasm: 'x' is not an input signal"),
    ("/tmp/state/spool/jobs/abc123/part-00000.wtns: section 2 (header): n8 must be 32",
     "part-00000.wtns: section 2 (header): n8 must be 32"),
    ("cannot open '/opt/keys/big.zkey' (No such file)", "cannot open 'big.zkey' (No such file)"),
    ("done 1/2 partitions, see http://host:9820/v1/jobs/x", "done 1/2 partitions, see http://host:9820/v1/jobs/x"),
    ("a relative path keys/x.zkey stays", "a relative path keys/x.zkey stays"),
    (None, None),
])
def test_absolute_paths_become_file_names(text, public):
    assert public_message(text) == public
