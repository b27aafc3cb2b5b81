"""Parsing of the benchmark applications' `RESULT key=value ...` line."""
from __future__ import annotations

from dataclasses import dataclass, field


class ResultLineError(ValueError):
    pass


@dataclass(frozen=True)
class AppResult:
    app: str
    items: float
    iterations: int
    seconds: float
    throughput: float
    unit: str
    per_iteration_us: float
    device: int
    check: str
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def kernels_per_s(self) -> float | None:
        """Kernel launches per second where the app reports its launch count."""
        launches = self.extra.get("launches")
        if launches is None or self.seconds <= 0:
            return None
        return float(launches) / self.seconds

    @property
    def gflops(self) -> float | None:
        if self.unit == "flop/s":
            return self.throughput / 1e9
        return None


_REQUIRED = ("app", "items", "iterations", "seconds", "throughput", "unit",
             "per_iteration_us", "device", "check")


def parse_result_line(line: str) -> AppResult:
    if not line.startswith("RESULT "):
        raise ResultLineError(f"not a RESULT line: {line!r}")
    fields: dict[str, str] = {}
    for token in line.split()[1:]:
        key, sep, value = token.partition("=")
        if not sep or not key:
            raise ResultLineError(f"bad token {token!r} in {line!r}")
        fields[key] = value
    missing = [k for k in _REQUIRED if k not in fields]
    if missing:
        raise ResultLineError(f"RESULT line lacks {', '.join(missing)}: {line!r}")
    try:
        return AppResult(
            app=fields["app"], items=float(fields["items"]),
            iterations=int(fields["iterations"]), seconds=float(fields["seconds"]),
            throughput=float(fields["throughput"]), unit=fields["unit"],
            per_iteration_us=float(fields["per_iteration_us"]), device=int(fields["device"]),
            check=fields["check"],
            extra={k: v for k, v in fields.items() if k not in _REQUIRED})
    except ValueError as e:
        raise ResultLineError(f"bad number in {line!r}: {e}") from e


def find_result(stdout: str) -> AppResult:
    """The one RESULT line of an app's output (exactly one is required)."""
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    if len(lines) != 1:
        raise ResultLineError(f"expected exactly one RESULT line, got {len(lines)}")
    return parse_result_line(lines[0])
