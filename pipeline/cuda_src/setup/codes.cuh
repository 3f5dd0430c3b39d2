// A coefficient code: the index of a term's value in the circuit's table of distinct
// coefficients (uint16, as formats/compact_r1cs.py holds them).
#pragma once

typedef unsigned short setup_code_t;
