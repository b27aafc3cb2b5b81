from pathlib import Path

import pytest

from mearas_am import config
from mearas_am.config import load_config, parse_config
from mearas_am.errors import ConfigError
from mearas_am.units import format_size, parse_cc, parse_size

from .conftest import write_config


def test_sizes() -> None:
    assert parse_size("16GiB") == 16 << 30
    assert parse_size("512 MiB") == 512 << 20
    assert parse_size(1234) == 1234
    assert parse_size("2GB") == 2 * 10**9
    assert format_size(80 << 30) == "80.0GiB"
    for bad in ("lots", "-1", "5 parsecs", True, -4):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_cc() -> None:
    assert parse_cc("8.6") == (8, 6)
    with pytest.raises(ValueError, match="MAJOR.MINOR"):
        parse_cc("eight")


def test_config_file_roundtrip(tmp_path: Path) -> None:
    p = write_config(tmp_path / "am.toml", node="n1", factor=4, socket_path="/tmp/x.sock",
                     libdir="/opt/mearas/lib", client_socket="/tmp/client.sock")
    c = load_config(str(p))
    assert c.node.name == "n1" and c.node.max_vgpus_per_gpu == 4
    assert c.mearasd.client_socket == "/tmp/client.sock" and c.warnings == ()
    assert c.mearasd.control_socket == "/tmp/x.sock" and c.libdir == "/opt/mearas/lib"
    assert c.registry.backend == "file"


def test_config_defaults() -> None:
    c = parse_config({})
    assert c.mearasd.control_socket == "/run/mearas/control.sock"
    assert c.mearasd.client_socket == "/run/mearas/mearasd.sock"  # mearasd's own default
    assert c.libdir == "/usr/local/lib/mearas"
    assert c.registry.backend == "file" and c.registry.endpoints == ("127.0.0.1:2379",)


@pytest.mark.parametrize("doc,msg", [
    ({"registry": {"backend": "zookeeper"}}, "backend must be"),
    ({"node": {"max_vgpus_per_gpu": 0}}, "max_vgpus_per_gpu"),
    ({"registry": {"node_ttl": 1}}, "node_ttl"),
    ({"mearasd": {"metrics_url": "127.0.0.1:9400"}}, "metrics_url must be an http:// URL"),
])
def test_config_errors(doc: dict[str, object], msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        parse_config(doc)


def test_retired_gpu_keys_are_ignored_with_a_warning() -> None:
    c = parse_config({"node": {"use_nvml": True, "gpus": [{"name": "x", "memory": "1GiB"}]}},
                     "am.toml")
    assert len(c.warnings) == 2
    assert all(w.startswith("am.toml: [node] ") and "GPUs mearasd reports" in w
               for w in c.warnings)
    assert "gpus" in c.warnings[0] and "use_nvml" in c.warnings[1]


def test_missing_default_config_is_an_error(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEARAS_CONFIG", raising=False)
    monkeypatch.setattr(config, "DEFAULT_CONFIG_PATH", str(tmp_path / "am.toml"))
    with pytest.raises(ConfigError, match="no config: .*am.toml does not exist.*--config"):
        load_config()


def test_missing_explicit_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope.toml"))


def test_bad_toml(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text("[node\nname=")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(str(p))
