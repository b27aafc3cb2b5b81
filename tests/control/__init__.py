import sys
from pathlib import Path

# the project's tests/: procs.py (the processes the suites start)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
