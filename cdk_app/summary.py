"""`make synth`'s summary: the resources of each synthesized template, by type."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

PLACEHOLDER_NOTE = (
    "PLACEHOLDER RDS CA bundle in the layer: for review only. A deploy needs the real one "
    "(`make rds-ca-bundle`), and refuses this template."
)


def summarize(outdir: Path) -> str:
    lines = []
    for template_path in sorted(outdir.glob("*.template.json")):
        resources = json.loads(template_path.read_text()).get("Resources", {})
        counts = Counter(resource["Type"] for resource in resources.values())
        lines.append(f"{template_path.name}: {sum(counts.values())} resources")
        lines += [f"  {count:3d}  {kind}" for kind, count in sorted(counts.items())]
        if "RdsCaBundleIsPlaceholder" in json.loads(template_path.read_text()).get("Rules", {}):
            lines.append(f"  {PLACEHOLDER_NOTE}")
    report = outdir / "validation-report.json"
    if report.exists():
        lines.append(f"cdk-nag report: {report}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1] if len(sys.argv) > 1 else "cdk.out")))
