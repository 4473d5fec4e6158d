"""Canary: the local cloud patches private moto functions. If moto moves them, fail here,
loudly, rather than with mysterious Step Functions errors in the e2e tier."""

from importlib.metadata import version

from localcloud.moto_lambda import (
    EXPECTED_CLIENT_SIGNATURE,
    EXPECTED_SIGNATURE,
    client_seam_signature,
    seam_signature,
)


def test_moto_is_the_pinned_version():
    assert version("moto") == "5.2.5", "re-verify localcloud/moto_lambda.py, then re-pin"


def test_the_private_lambda_seam_has_the_shape_we_patch():
    assert seam_signature() == EXPECTED_SIGNATURE


def test_the_step_functions_client_factory_has_the_shape_we_replace():
    assert client_seam_signature() == EXPECTED_CLIENT_SIGNATURE
