"""Access to the generated protobuf modules, with a clear error when they were not built."""

from ..errors import MearasError

try:
    from ..generated import common_pb2, control_pb2
except ImportError as e:  # pragma: no cover - only without a build
    raise MearasError("protobuf modules missing: run 'make -C assembly-manager proto' "
                      f"(needs protoc from protobuf-compiler): {e}") from None

__all__ = ["common_pb2", "control_pb2"]
