"""mearasd's config file (--config, host-backend/core/config_file.c) against Python's tomllib:
what mearasd reads (--print-config) is what tomllib reads; what it refuses it refuses with
FILE:LINE; flags win over the file; the file drives the daemon it starts."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from .conftest import MEARASD, start, stop, wait_listening

# valid TOML in the subset mearasd reads: each is parsed by tomllib and by mearasd
VALID = {
    "plain": 'device = "sim"\nquota-mb = 4096\nvgpus = 2\n',
    "comments-and-blank-lines": '# a comment\n\n   # indented comment\ndevice = "sim" # trailing\n'
                                '\t\nspin-us = 0   # zero\n',
    "integers": "quota-mb = 4_096\nvgpus = +3\nspin-us = 0\nlink-batch = 1_0_0\n",
    "basic-string-escapes": 'node-name = "tab\\there \\"quoted\\" back\\\\slash \\u00e9 \\U0001F600 '
                            '\\b\\f\\n\\r"\n',
    "literal-strings": "node-name = 'C:\\no\\escapes \"here\"'\nsocket-group = ''\n",
    "utf8": 'node-name = "nœud-α-節点"\n',
    "array-one-line": 'remote = ["1=127.0.0.1:7001", "2=host.example:7002/1"]\n',
    "array-multi-line": 'remote = [\n  "1=127.0.0.1:7001",  # first\n\n  \'2=127.0.0.1:7002\',\n]\n'
                        'vm = [] # none\n',
    "crlf": 'device = "sim"\r\nquota-mb = 512\r\n',
    "cpu-list": 'cpus = "0-1,3"\n',
    "no-final-newline": 'link-encryption = "off"',
    "every-kind": 'device = "sim"\nnode-name = "n1"\nkernel-timeout-ms = 2000\n'
                  'link-dead-ms = 5_000\nmax-clients = 64\nlog-level = "debug"\nlog = "stderr"\n'
                  'remote = ["3=10.0.0.2:7100/0"]\n',
}

# (file text, line of the error, what the message says, TOML?): False where the text is not
# TOML (tomllib refuses it too), True where it is TOML outside the subset (refused by name),
# None where the refusal is mearasd's own (keys, 64-bit integers)
INVALID = [
    ('device = "sim"\n[node]\nname = "x"\n', 2, "tables are not supported", True),
    ('a.b = 1\n', 1, "dotted keys are not supported", True),
    ('"device" = "sim"\n', 1, "quoted keys are not supported", True),
    ('device = "sim"\nquota-mb = 1.5\n', 2, "floats are not supported", True),
    ('quota-mb = 1e3\n', 1, "floats are not supported", True),
    ('quota-mb = -inf\n', 1, "floats are not supported", True),
    ('quota-mb = nan\n', 1, "floats are not supported", True),
    ('device = nope\n', 1, "strings need quotes", False),
    ('node-name = 1979-05-27\n', 1, "dates and times are not supported", True),
    ('quota-mb = 0x10\n', 1, "only decimal integers", True),
    ('node-name = """x"""\n', 1, "multi-line strings are not supported", True),
    ('node-name = {a = "b"}\n', 1, "inline tables are not supported", True),
    ('device = true\n', 1, "not a boolean", True),
    ('\n\nquota-mb = 012\n', 3, "leading zeros", False),
    ('quota-mb = 1__0\n', 1, "underscore", False),
    # TOML's integers are 64-bit; tomllib takes any size
    ('quota-mb = 99999999999999999999\n', 1, "out of range", None),
    ('node-name = "open\n', 1, "unterminated string", False),
    ('node-name = "bad \\x escape"\n', 1, "invalid escape", False),
    ('node-name = "\\uD800"\n', 1, "not a Unicode scalar value", False),
    ('device = sim\n', 1, "strings need quotes", False),
    ('device = "sim" quota-mb = 1\n', 1, "unexpected text after the value", False),
    ('device\n', 1, "expected '='", False),
    ('remote = ["1=h:1",\n  "2=h:2"\n  "3=h:3"]\n', 3, "expected ',' or ']'", False),
    ('remote = ["1=h:1", 7]\n', 1, "holds strings only", True),
    ('device = "sim"\ndevice = "cuda"\n', 2, "given twice (first on line 1)", False),
    ('node-name = "a\x01b"\n', 1, "control character", False),
    ('node-name = "\xff"\n', 1, "not valid UTF-8", False),
    ('node-name = ""\r', 1, "carriage return", False),
    ('\n# ok\ncolour = "blue"\n', 3, "unknown key 'colour'", None),
    ('help = "yes"\n', 1, "not a config key", None),
    ('config = "/etc/other.toml"\n', 1, "not a config key", None),
    ('quota-mb = ["1", "2"]\n', 1, "takes one value, not an array", None),
]


def write(tmp: Path, text: str | bytes, name: str = "mearasd.toml") -> Path:
    p = tmp / name
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    p.chmod(0o644)  # whatever the umask: mearasd refuses files others may write
    return p


def print_config(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MEARASD), "--print-config", *args], capture_output=True, text=True,
                          timeout=20)


@pytest.mark.parametrize("name", sorted(VALID))
def test_file_reads_as_tomllib_reads_it(tmp_path: Path, name: str) -> None:
    f = write(tmp_path, VALID[name])
    want: dict[str, Any] = tomllib.loads(VALID[name])
    r = print_config(f"--config={f}")
    assert r.returncode == 0, r.stderr
    got = tomllib.loads(r.stdout)
    # an empty array gives no option at all
    assert got == {k: v for k, v in want.items() if v != []}, r.stdout


@pytest.mark.parametrize("text,line,message,toml_invalid", INVALID,
                         ids=[m for _, _, m, _ in INVALID])
def test_bad_file_names_file_and_line(tmp_path: Path, text: str, line: int, message: str,
                                      toml_invalid: bool | None) -> None:
    f = write(tmp_path, text.encode("latin-1") if "\xff" in text else text)
    if toml_invalid is False:
        # the reference agrees that the file is not TOML
        with pytest.raises((tomllib.TOMLDecodeError, UnicodeDecodeError)), open(f, "rb") as fb:
            tomllib.load(fb)
    elif toml_invalid:
        tomllib.loads(text)  # valid TOML, outside the subset: refused by name
    r = print_config(f"--config={f}")
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"mearasd: {f}:{line}: "), r.stderr
    assert message in first, r.stderr


def test_refused_value_names_its_line(tmp_path: Path) -> None:
    f = write(tmp_path, 'device = "sim"\n# quota\nquota-mb = 0\n')
    r = print_config(f"--config={f}")
    assert r.returncode == 2
    assert "bad --quota-mb '0'" in r.stderr and f"from {f}:3" in r.stderr, r.stderr


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    f = write(tmp_path, 'vgpus = 3\nnode-name = "from-file"\nremote = ["1=a:1", "2=b:2"]\n'
                        'quota-mb = 100\n')
    r = print_config(f"--config={f}", "--vgpus=4", "--remote=3=c:3", "--node-name", "flag")
    assert r.returncode == 0, r.stderr
    got = tomllib.loads(r.stdout)
    # the command line's values replace the file's, arrays whole; the rest stays
    assert got == {"vgpus": 4, "node-name": "flag", "remote": ["3=c:3"], "quota-mb": 100}, r.stdout


def test_print_config_reads_back(tmp_path: Path) -> None:
    """--print-config's output is itself a config file giving the same options."""
    f = write(tmp_path, VALID["basic-string-escapes"] + VALID["array-multi-line"])
    first = print_config(f"--config={f}", "--spin-us=7", "--socket-group=")
    assert first.returncode == 0, first.stderr
    again = print_config(f"--config={write(tmp_path, first.stdout, 'again.toml')}")
    assert again.returncode == 0, again.stderr
    assert tomllib.loads(again.stdout) == tomllib.loads(first.stdout) != {}


@pytest.mark.parametrize("mode", [0o664, 0o646])
def test_file_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    f = write(tmp_path, 'device = "sim"\n')
    f.chmod(mode)
    r = print_config(f"--config={f}")
    assert r.returncode == 2 and f"mode {mode:04o}: refused" in r.stderr, r.stderr
    os.chown(f, 65534, 65534)  # someone else's file, not writable by others
    f.chmod(0o644)
    r = print_config(f"--config={f}")
    assert r.returncode == 2 and "owned by uid 65534" in r.stderr, r.stderr


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    r = print_config(f"--config={tmp_path / 'none.toml'}")
    assert r.returncode == 2 and "No such file" in r.stderr, r.stderr


def test_file_drives_the_daemon(tmp_path: Path) -> None:
    sock, ctl = tmp_path / "from-file.sock", tmp_path / "from-file-ctl.sock"
    f = write(tmp_path, f'device = "sim"\nsocket = "{sock}"\ncontrol = "{ctl}"\n'
                        'log-level = "warn"\n')
    proc, log = start(tmp_path, f"--config={f}", sockets=False)
    try:
        wait_listening(sock, proc)
        wait_listening(ctl, proc)
    finally:
        assert stop(proc) == 0
    # log-level = "warn" from the file: none of the startup's info lines
    assert not re.search(r": info: ", log.read_text()), log.read_text()


def test_verbs_links_need_encryption_off(tmp_path: Path) -> None:
    """link-transport = "verbs" from the file: with link encryption on (the default) mearasd does
    not start and says why, before it listens on anything."""
    key = tmp_path / "key"
    key.write_text("cluster-key\n")
    sock = tmp_path / "verbs.sock"
    f = write(tmp_path, f'device = "sim"\nsocket = "{sock}"\ncontrol = "{tmp_path / "ctl.sock"}"\n'
                        f'link-port = 7999\ncluster-key-file = "{key}"\nlink-transport = "verbs"\n')
    r = subprocess.run([str(MEARASD), f"--config={f}"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "--link-transport=verbs needs --link-encryption=off on both nodes" in r.stderr, r.stderr
    assert not sock.exists()


@pytest.mark.parametrize("word", ["auto", "on", "off"])
def test_remote_spin_takes_its_words(tmp_path: Path, word: str) -> None:
    f = write(tmp_path, f'remote-spin = "{word}"\n')
    r = print_config(f"--config={f}")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(r.stdout) == {"remote-spin": word}, r.stdout


def test_remote_spin_refuses_another_word(tmp_path: Path) -> None:
    f = write(tmp_path, 'device = "sim"\nremote-spin = "always"\n')
    r = print_config(f"--config={f}")
    assert r.returncode == 2
    assert "bad --remote-spin 'always' (auto, on or off)" in r.stderr and f"from {f}:2" in r.stderr, r.stderr


@pytest.mark.parametrize(("cpus", "why"), [("3-1", "range 3-1 runs backwards"), ("", "no CPU named"),
                                           ("0;1", "unexpected ';'")])
def test_cpus_refuses_a_bad_list(cpus: str, why: str) -> None:
    r = print_config(f"--cpus={cpus}")
    assert (r.returncode, f"bad --cpus '{cpus}': {why}" in r.stderr) == (2, True), r.stderr


def test_cpus_confine_the_daemon(tmp_path: Path) -> None:
    """--cpus: the daemon runs on those CPUs only (its threads and workers inherit it) and
    says so at startup."""
    cpu = min(os.sched_getaffinity(0))
    proc, log = start(tmp_path, f"--cpus={cpu}")
    try:
        wait_listening(tmp_path / "m.sock", proc)
        status = Path(f"/proc/{proc.pid}/status").read_text()
        allowed = re.search(r"^Cpus_allowed_list:\s*(\S+)$", status, re.M)
        assert allowed and allowed.group(1) == str(cpu), status
    finally:
        assert stop(proc) == 0
    assert f"running on CPU(s) {cpu} (--cpus)" in log.read_text(), log.read_text()


def test_cpus_it_may_not_use_are_refused(tmp_path: Path) -> None:
    """A CPU outside those mearasd may use (taskset, cgroup cpuset, offline): it does not start,
    says which, and listens on nothing."""
    mine = os.sched_getaffinity(0)
    cpu = max(mine) + 1
    sock = tmp_path / "m.sock"
    r = subprocess.run([str(MEARASD), "--config=", "--device=sim", f"--socket={sock}",
                        f"--control={tmp_path / 'ctl.sock'}", f"--cpus={min(mine)},{cpu}"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"--cpus: CPU(s) {cpu} are not among those this process may use" in r.stderr, r.stderr
    assert not sock.exists()
