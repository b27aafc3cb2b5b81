"""Talking to mearasd over its control socket (protobuf messages of proto/control.proto)."""
