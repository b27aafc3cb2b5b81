"""Errors the manager reports to users; each carries a message fit for a terminal."""


class MearasError(Exception):
    """Base of every error the CLI and the libvirt hook report as a clear message."""


class ConfigError(MearasError):
    pass


class RequestError(MearasError):
    """The assembly request itself is invalid (bad metadata, bad CLI arguments)."""


class NoCapacityError(MearasError):
    """No placement satisfies the request with the capacity the cluster has now."""


class BookingConflictError(MearasError):
    """Concurrent bookers kept winning; the booking gave up after its retries."""


class RegistryError(MearasError):
    """The registry (file store or etcd) cannot be reached or holds bad data."""


class MearasdError(MearasError):
    """mearasd cannot be reached or refused a request."""
