"""One-shot proving from the command line (``zkpipe prove``, ``zkpipe fullprove``): one key, one
witness, one process, as snarkjs and rapidsnark are used from scripts.

``local`` proves in this process (the device set up in parallel with reading the key),
``remote`` hands the job to a running ``zkpipe serve``, ``timeline`` says where the time went.
Every module here imports only what its own path needs: see tests/test_prove_command.py.
"""
