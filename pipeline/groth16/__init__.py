from ..backends.protocol import Backend, MsmResults
from .prover import Blinding, Proof, WitnessMismatch, assemble, check_witness, prove
from .witness_scan import WitnessOutOfRange

__all__ = ["Backend", "Blinding", "MsmResults", "Proof", "WitnessMismatch", "WitnessOutOfRange", "assemble",
           "check_witness", "prove"]
