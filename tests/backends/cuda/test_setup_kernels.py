"""CI without a GPU: the development setup's kernels compile through NVRTC for sm_90 on both curves,
and the host-side plans they run with are sound."""
from __future__ import annotations

import pytest

from pipeline.curves import BLS12_381, BN254
from tests.backends.cuda.test_compile import assert_every_expression_compiled
from tests.conftest import nvrtc_or_skip


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    nvrtc_or_skip()
    from pipeline.backends.cuda.kernels import build_units
    from pipeline.backends.cuda.setup_kernels import SETUP_UNITS

    return build_units([BN254, BLS12_381], "sm_90", cache_dir=tmp_path_factory.mktemp("kernels"), table=SETUP_UNITS)


@pytest.mark.parametrize("curve_name", [BN254.name, BLS12_381.name])
def test_every_setup_kernel_compiles_for_sm90(built, curve_name):
    from pipeline.backends.cuda.kernels import base_name
    from pipeline.backends.cuda.setup_kernels import SETUP_SIGNATURES, SETUP_UNITS

    assert_every_expression_compiled(built, curve_name, SETUP_UNITS)
    for expr in (e for exprs in SETUP_UNITS.values() for e in exprs):
        assert base_name(expr) in SETUP_SIGNATURES, f"{expr}: no launch signature"


@pytest.mark.parametrize("curve", [BN254, BLS12_381], ids=lambda c: c.name)
def test_table_plans_fit_the_budget_and_cover_every_bit(curve):
    from pipeline.backends.cuda.setup_kernels import TABLE_BUDGET_BYTES, table_plan

    for point_bytes in (16 * curve.fq.limbs, 32 * curve.fq.limbs):  # G1, G2 affine
        plan = table_plan(curve.fr.bits, point_bytes)
        assert plan.entries * point_bytes <= TABLE_BUDGET_BYTES
        assert plan.window * plan.n_windows >= curve.fr.bits + 1  # room for the last signed digit's carry
        wider = table_plan(curve.fr.bits, point_bytes, budget=8 * TABLE_BUDGET_BYTES)
        assert wider.window > plan.window


def test_window_bases_are_powers_of_two_times_the_generator():
    from pipeline.backends.cuda.setup_kernels import TablePlan, window_bases

    g1 = BN254.g1
    bases = window_bases(g1, TablePlan(5, 3))
    for win, base in enumerate(bases):
        assert base == g1.to_affine(g1.mul(g1.from_affine(g1.generator), 1 << (5 * win)))


def test_table_scalars_times_the_generator_give_the_host_table():
    """The device table is G times these scalars (Montgomery form), so they must give host_table."""
    from pipeline.backends.cuda.setup_kernels import TablePlan, host_table, table_scalars

    g1, fr = BN254.g1, BN254.fr
    plan = TablePlan(3, 4)
    scalars = [fr.from_mont(k) for k in fr.ints_from_limbs(table_scalars(fr, plan))]
    assert host_table(g1, plan) == [g1.to_affine(g1.mul(g1.from_affine(g1.generator), k)) for k in scalars]
    assert scalars[:4] == [1, 2, 3, 4] and scalars[4] == 8  # window 1 starts at 2^3
