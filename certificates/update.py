"""Refresh the committed certificates: ``python certificates/update.py``.

Runs ``certsym reproduce --quick`` into a temporary folder and copies a fixed, small selection of the
certificates it wrote (every MATH.md example, and three seeded instances per statement; no grid sweeps) into
certificates/<statement>/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
OTHERS = 3


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "certsym", "reproduce", "--quick", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        for folder in sorted((Path(tmp) / "certificates").iterdir()):
            target = HERE / folder.name
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            files = sorted(folder.glob("*.json"))
            examples = [p for p in files if p.name[0] in "ES" and p.name[1].isdigit()]  # MATH.md's E*, and S1
            others = [p for p in files if p not in examples and not p.name.startswith("grid_")]
            chosen = examples + others[:OTHERS]
            for path in chosen:
                shutil.copy(path, target / path.name)
    # reproduce writes hessian_inertia certificates (which embed the Krawczyk box); keep one bare critical_point too
    subprocess.run([sys.executable, "-m", "certsym", "landscape", "critical", "--family", "one-misfit", "--k", "6",
                    "--cert", str(HERE / "landscape" / "one-misfit_k6_critical_point.json")], check=True,
                   stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
