"""Canary: the local cloud patches a private moto method. If moto moves it, fail here,
loudly, rather than with mysterious Step Functions errors in the e2e tier."""

from importlib.metadata import version

from localcloud.moto_lambda import EXPECTED_SIGNATURE, seam_signature


def test_moto_is_the_pinned_version():
    assert version("moto") == "5.2.5", "re-verify localcloud/moto_lambda.py, then re-pin"


def test_the_private_lambda_seam_has_the_shape_we_patch():
    assert seam_signature() == EXPECTED_SIGNATURE
