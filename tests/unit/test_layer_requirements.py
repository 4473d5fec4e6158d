from pathlib import Path

from cdk_app.layer_requirements import PROVIDED_BY_LAMBDA, layer_requirements

REQUIREMENTS = Path(__file__).resolve().parents[2] / "layers" / "gpudev" / "requirements.txt"


def test_layer_requirements_match_the_lock_file():
    assert REQUIREMENTS.read_text() == layer_requirements(), "run `make layer-requirements`"


def test_layer_pins_kubernetes_and_leaves_boto3_to_the_runtime():
    pins = dict(
        line.split("==", 1)
        for line in REQUIREMENTS.read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert pins["kubernetes"] == "37.0.1"
    assert not set(PROVIDED_BY_LAMBDA) & set(pins)
