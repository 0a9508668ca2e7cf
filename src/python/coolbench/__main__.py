"""``python -m coolbench`` and the ``coolbench`` console script: run the coolbench
command (the C++ executable installed in this package's bin/ folder) with the
same arguments, exit code and signals, by replacing this process with it."""
import os
import sys
from pathlib import Path


def command_path() -> Path:
    """The coolbench executable that belongs to this package."""
    return Path(__file__).resolve().parent / "bin" / "coolbench"


def main() -> None:
    command = command_path()
    if not os.access(command, os.X_OK):
        sys.stderr.write(
            f"coolbench: the coolbench command is not part of this installation ({command} is "
            "missing); reinstall the package with `pip install .` from a coolbench checkout\n")
        sys.exit(1)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command, ["coolbench", *sys.argv[1:]])


if __name__ == "__main__":
    main()
