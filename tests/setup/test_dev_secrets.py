"""Development secrets: valid when drawn, reproducible from a seed, never printed, bad ones refused."""
from __future__ import annotations

import pytest

from pipeline.setup.dev_secrets import BadSecrets, DevSecrets


def test_drawn_secrets_pass_their_check_and_differ(curve):
    a, b = DevSecrets.draw(curve, 1024), DevSecrets.draw(curve, 1024)
    a.check(curve, 1024)
    assert a != b


def test_a_seed_reproduces_the_secrets(curve):
    assert DevSecrets.draw(curve, 16, seed=3) == DevSecrets.draw(curve, 16, seed=3)
    assert DevSecrets.draw(curve, 16, seed=3) != DevSecrets.draw(curve, 16, seed=4)


def test_repr_hides_the_values(curve):
    secrets = DevSecrets.draw(curve, 16, seed=3)
    assert str(secrets.tau) not in repr(secrets) and "hidden" in repr(secrets)


def test_zero_and_roots_of_unity_are_refused(curve):
    with pytest.raises(BadSecrets, match="delta"):
        DevSecrets(5, 1, 1, 1, 0).check(curve, 8)
    root = curve.fr.root_of_unity(4)  # a 16th root: on the 2n domain of n = 8
    with pytest.raises(BadSecrets, match="tau"):
        DevSecrets(root, 1, 1, 1, 1).check(curve, 8)
    DevSecrets(root, 1, 1, 1, 1).check(curve, 4)  # a 16th root is not an 8th one: fine for n = 4
