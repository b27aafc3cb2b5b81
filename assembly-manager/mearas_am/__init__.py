"""mearas assembly manager: GPU assemblies for VMs and processes."""

from .generated.version import FULL as VERSION_FULL, VERSION as __version__

__all__ = ["PROTOCOL_MAJOR", "PROTOCOL_MINOR", "VERSION_FULL", "__version__"]
PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 0
