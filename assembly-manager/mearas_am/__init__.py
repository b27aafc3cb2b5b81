"""mearas assembly manager: GPU assemblies for VMs and processes."""

__version__ = "0.1.0"
PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 0
