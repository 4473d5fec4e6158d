"""Cold starts: each function's handler import, beside Python's own startup and a bare
`import boto3`, and the `gpu-dev` CLI's --help, --version and the import behind `list`.

A function is imported as Lambda does: a fresh interpreter with the function's folder (its
task root) and the layer's `python/` first on sys.path, and the environment the deployment
gives it (cdk_app/declaration.py: powertools settings, its database limits, queue URLs and
state machine ARNs; LAMBDA_TASK_ROOT and the function's name, so the tracer is on as in
Lambda). Each figure is the median of `--runs` (5) fresh interpreters, timed inside the
interpreter around the import; Python's startup and the CLI are wall times of whole processes.

Bytecode: every interpreter reads compiled bytecode from a cache of this run's own
(PYTHONPYCACHEPREFIX, written by one untimed warm-up process), as a Lambda whose files ship
their .pyc would. What dominates an import is its `-X importtime` self time summed per top-level
package, from one more run. For the API, one more line: its import and then its first request
without the network (GET /health, which makes the tracer, and the imports of a reservation
route), so what left the import is seen either moved to the first request or gone.
Run: `make bench` (about a minute on 2 quiet cores).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from cdk_app.declaration import DEPLOYMENT, FunctionSpec

ROOT = Path(__file__).resolve().parent.parent
LAYER = ROOT / "layers" / "gpudev" / "python"
REGION = "us-east-2"
ACCOUNT = "123456789012"
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")


def function_environment(spec: FunctionSpec) -> dict[str, str]:
    """The variables the deployment sets (as cdk_app/function.py and the stack do) and the
    ones the Lambda runtime adds."""
    environment = {
        "POWERTOOLS_SERVICE_NAME": spec.deployed_name,
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
        **spec.environment,
        **(spec.database.environment() if spec.database else {}),
        **{setting.variable: str(setting.default) for setting in spec.context_environment},
        "LAMBDA_TASK_ROOT": str(spec.code_dir),
        "AWS_LAMBDA_FUNCTION_NAME": spec.deployed_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "_HANDLER": spec.handler,
    }
    for queue in DEPLOYMENT.queues:
        if queue.name in spec.sends_to:
            environment[queue.url_variable] = (
                f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{queue.deployed_name}"
            )
    for machine in DEPLOYMENT.state_machines:
        if machine.name in spec.starts + spec.watches + spec.answers_tasks:
            environment[machine.arn_variable] = (
                f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{machine.deployed_name}"
            )
    return environment


def _import_code(module: str, path: list[Path], then: str = "") -> str:
    """Prints the seconds `import module` (and `then`) took."""
    return (
        "import sys, time\n"
        f"sys.path[:0] = {[str(p) for p in path]!r}\n"
        "started = time.perf_counter()\n"
        f"import {module}\n"
        f"{then}"
        "print(time.perf_counter() - started)\n"
    )


class Runner:
    def __init__(self, cache: str, runs: int):
        self.runs = runs
        self.base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.base["PYTHONPYCACHEPREFIX"] = cache

    def _run(self, args: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            args, env=self.base | environment, capture_output=True, text=True, check=True, cwd=ROOT
        )

    def import_seconds(self, code: str, environment: dict[str, str]) -> list[float]:
        return [
            float(self._run([sys.executable, "-c", code], environment).stdout.split()[-1])
            for _ in range(self.runs)
        ]

    def wall_seconds(self, args: list[str]) -> list[float]:
        times = []
        for _ in range(self.runs):
            started = time.perf_counter()
            self._run(args, {})
            times.append(time.perf_counter() - started)
        return times

    def dominant(self, code: str, environment: dict[str, str], top: int = 4) -> str:
        """The packages whose modules took the most time to execute (self time)."""
        stderr = self._run([sys.executable, "-X", "importtime", "-c", code], environment).stderr
        by_package: Counter[str] = Counter()
        for line in stderr.splitlines():
            match = _IMPORTTIME.match(line)
            if match:
                by_package[match.group(3).split(".")[0]] += int(match.group(1))
        return ", ".join(f"{name} {us / 1e6:.2f}" for name, us in by_package.most_common(top))

    def warm(self, specs: list[FunctionSpec]) -> None:
        """One process loads every handler by path (as the local cloud does) and the CLI:
        it writes the bytecode every timed run then reads."""
        loads = "".join(f"load({str(spec.code_dir)!r}, {spec.folder!r})\n" for spec in specs)
        code = (
            "import importlib.util, sys\n"
            f"sys.path[:0] = [{str(LAYER)!r}]\n"
            "def load(folder, name):\n"
            "    sys.path.insert(0, folder)\n"
            "    path = folder + '/handler.py'\n"
            "    spec = importlib.util.spec_from_file_location('h_' + name, path)\n"
            "    module = importlib.util.module_from_spec(spec)\n"
            "    sys.modules[spec.name] = module\n"
            "    spec.loader.exec_module(module)\n"
            f"{loads}"
            "import boto3, gpudev_cli.main, gpudev_cli.commands.reservations, botocore.session\n"
        )
        self._run([sys.executable, "-c", code], {"POWERTOOLS_SERVICE_NAME": "warm-up"})


# The API's first request after its import, without the network: GET /health (the tracer is
# made and patches) and the imports of a reservation route (its service, the pool, AWS
# clients). What the import no longer pays is either here or gone.
FIRST_REQUEST = """
import json, types
context = types.SimpleNamespace(
    function_name="gpudev-api", memory_limit_in_mb=1024, aws_request_id="cold-start",
    invoked_function_arn="arn:aws:lambda:us-east-2:123456789012:function:gpudev-api")
with open("events/api/health.json") as event:
    assert handler.handler(json.load(event), context)["statusCode"] == 200
import gpudev.reservations.service, gpudev.disks.requests, gpudev.aws, psycopg_pool
"""
UNSAMPLED_TRACE = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0"


def _api_first_request(runner: Runner) -> None:
    spec = DEPLOYMENT.function("Api")
    code = _import_code("handler", [spec.code_dir, LAYER], FIRST_REQUEST)
    environment = function_environment(spec) | {"_X_AMZN_TRACE_ID": UNSAMPLED_TRACE}
    times = runner.import_seconds(code, environment)
    print(
        f"{'api + first request':<26}{_median(times):>8.3f}{min(times):>7.3f}"
        f"{'':>9}   {runner.dominant(code, environment)}"
    )


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per figure")
    parser.add_argument("--function", action="append", help="only these folders (repeatable)")
    args = parser.parse_args()
    specs = [s for s in DEPLOYMENT.functions if not args.function or s.folder in args.function]
    specs.sort(key=lambda s: s.folder)

    with tempfile.TemporaryDirectory(prefix="gpudev-bytecode-") as cache:
        runner = Runner(cache, args.runs)
        runner.warm(specs)
        startup = _median(runner.wall_seconds([sys.executable, "-c", "pass"]))
        boto3_code = _import_code("boto3", [])
        boto3_times = runner.import_seconds(boto3_code, {})
        boto3 = _median(boto3_times)
        print(f"median (and min) of {args.runs} fresh interpreters, bytecode cached; seconds")
        print(f"{'python -c pass (wall)':<34}{startup:>7.3f}")
        print(
            f"{'import boto3':<26}{boto3:>8.3f}{min(boto3_times):>7.3f}"
            f"{'':>9}   {runner.dominant(boto3_code, {})}"
        )
        print()
        print(f"{'function handler import':<26}{'median':>8}{'min':>7}{'- boto3':>9}   top (self)")
        for spec in specs:
            code = _import_code("handler", [spec.code_dir, LAYER])
            environment = function_environment(spec)
            times = runner.import_seconds(code, environment)
            print(
                f"{spec.folder:<26}{_median(times):>8.3f}{min(times):>7.3f}"
                f"{_median(times) - boto3:>+9.3f}   {runner.dominant(code, environment)}"
            )
        if any(spec.folder == "api" for spec in specs):
            _api_first_request(runner)
        print()
        gpu_dev = str(Path(sys.executable).with_name("gpu-dev"))
        print(f"{'gpu-dev (wall, whole process)':<34}{'median':>7}")
        for argv in (["--help"], ["--version"]):
            wall = _median(runner.wall_seconds([gpu_dev, *argv]))
            print(f"{'gpu-dev ' + ' '.join(argv):<34}{wall:>7.3f}")
        # `gpu-dev list` before its one request: the CLI, the command and the signer.
        signer = (
            "from gpudev_cli.client import session_for, SigV4Client\n"
            "client = SigV4Client('https://example.invalid', session_for(None, 'us-east-2'))\n"
            "client.signed_headers('GET', '/v1/reservations', credentials=None)\n"
        )
        environment = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret"}
        code = _import_code("gpudev_cli.main, gpudev_cli.commands.reservations", [], signer)
        times = runner.import_seconds(code, environment)
        print(
            f"{'gpu-dev list: import + sign':<34}{_median(times):>7.3f}   "
            f"{runner.dominant(code, environment)}"
        )


if __name__ == "__main__":
    main()
