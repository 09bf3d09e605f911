# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Describe this Horovod container for horovod_launch's preflight, as one JSON object.

Run in the master's container (``python3 -c CODE --host NAME=ADDRESS ...``), it probes there, tells which
hosts are this one and probes every other host's container at once over the pinned ssh (``python3 -``
with this code on stdin there), after writing a marker with a fresh token into each shared directory that
every container must read back. It reports the hostname, Horovod's version and the other packages that
shape a run (PACKAGES, the NCCL library), the IPv4 addresses per
interface and which interface holds each host's address, /dev/shm, missing directories, the horovodrun
launchers and every other process (values of NAME=value words hidden), the RDMA devices in /dev/infiniband,
the GPUs the container sees (and,
when it sees any, which GPUs and CUDA each ``--gpu-framework`` was built for), and with ``--check-build``
what ``horovodrun --check-build`` printed (kept in CHECK_BUILD_CACHE until the installed packages change).
Python's standard library suffices; the judgement is plugins/module_utils/horovod_preflight.py's.
"""

import argparse
import array
import contextlib
import errno
import fcntl
import json
import os
import re
import secrets
import shlex
import shutil
import socket
import stat
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Iterator, List, Optional, Sequence, Tuple  # Python 3.6: no PEP 585/604 forms

SIOCGIFADDR = 0x8915
# (path of a marker file, the token it holds).
Marker = Tuple[str, str]
# A file on the share is opened without following a link, blocking on a FIFO or becoming a terminal; one
# this probe writes is a new name, created exclusively. (novermin: vermin's union-types check reads any |.)
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY  # novermin
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY  # novermin
# Where the answer of `horovodrun --check-build` is kept, in the container (a new container, from a
# new image, starts without it).
CHECK_BUILD_CACHE = "/root/.cache/multinode-horovod/check-build.json"

# What nvidia-smi tells of each GPU the container sees (compute_cap: drivers from 510 on), and the CUDA
# version the driver supports, which only its table's header shows.
NVIDIA_SMI_QUERY = ["nvidia-smi", "--query-gpu=index,name,compute_cap", "--format=csv,noheader"]
DRIVER_CUDA_RE = re.compile(r"CUDA Version:\s*([0-9]+\.[0-9]+)")
# Which GPUs and CUDA a framework in the image was built for, read in a python3 of its own (importing a
# framework takes seconds and memory this probe does not keep). torch.cuda.get_arch_list() is empty when
# CUDA cannot start (a driver too old for the runtime).
FRAMEWORK_GPU_CODE = {
    "pytorch": (
        "import json, torch\n"
        "c = torch.cuda\n"
        "n = c.device_count() if c.is_available() else 0\n"
        "try:\n"
        "    v = c.nccl.version() if n else ''\n"
        "except Exception:\n"  # a build without NCCL: the GPU checks must not fail for it
        "    v = ''\n"
        "print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda or '',"
        " 'arch_list': list(c.get_arch_list()) if n else [], 'device_count': n,"
        " 'nccl': '.'.join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)}))\n"
    ),
    "tensorflow": (
        "import json, tensorflow as tf\n"
        "b = dict(tf.sysconfig.get_build_info())\n"
        "print(json.dumps({'version': tf.__version__,"
        " 'cuda': str(b.get('cuda_version') or '') if b.get('is_cuda_build') else '',"
        " 'arch_list': [str(a) for a in b.get('cuda_compute_capabilities') or []],"
        " 'device_count': len(tf.config.list_physical_devices('GPU'))}))\n"
    ),
}
GPU_READ_TIMEOUT = 120
# What a torchrun run needs of the image (horovod_launch_launcher: torchrun), read in a python3 of its own:
# torch's version, whether it has torch.distributed and its Gloo and NCCL backends, and torchrun.
TORCH_CODE = (
    "import json, shutil, torch\n"
    "d = torch.distributed\n"
    "a = d.is_available()\n"
    "print(json.dumps({'version': torch.__version__, 'distributed': a,"
    " 'gloo': bool(a and d.is_gloo_available()), 'nccl': bool(a and d.is_nccl_available()),"
    " 'torchrun': shutil.which('torchrun') or ''}))\n"
)

# The values of NAME=value words are hidden in every command line this prints: horovodrun puts the run's
# environment (which may hold secrets) on its ranks' command lines. The same pattern as
# plugins/module_utils/jobs.py (tests/unit/plugins/module_utils/test_horovod_run_helper.py checks that they agree).
ASSIGNMENT = re.compile(r"(?<![^\s'\"])([A-Za-z_][A-Za-z0-9_]*)=(?:'[^']*'|\"[^\"]*\"|\S*)")


def redact(args: str) -> str:
    return ASSIGNMENT.sub(lambda match: f"{match.group(1)}=...", args)


def interface_addresses() -> Dict[str, List[str]]:
    """IPv4 addresses per interface: psutil when present (Horovod needs it), else ioctl."""
    try:
        import psutil  # noqa: PLC0415 - optional; Horovod images have it

        return {
            name: sorted(a.address for a in addrs if a.family == socket.AF_INET)
            for name, addrs in psutil.net_if_addrs().items()
        }
    except ImportError:
        pass
    result: Dict[str, List[str]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _unused, name in socket.if_nameindex():
            request = array.array("B", struct.pack("256s", name.encode()[:15]))
            try:
                fcntl.ioctl(sock.fileno(), SIOCGIFADDR, request)
                result[name] = [socket.inet_ntoa(request.tobytes()[20:24])]
            except OSError:
                result[name] = []
    return result


def resolve(address: str) -> Optional[str]:
    try:
        return socket.gethostbyname(address)
    except OSError:
        return None


def shm_bytes(path: str = "/dev/shm") -> int:
    try:
        stats = os.statvfs(path)
    except OSError:
        return 0
    return stats.f_blocks * stats.f_frsize


def routes(path: str = "/proc/net/route") -> List[Dict[str, object]]:
    """The IPv4 routes (interface, destination, prefix length, gateway), from the kernel's table."""
    found: List[Dict[str, object]] = []
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()[1:]
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        as_ip = [socket.inet_ntoa(struct.pack("<I", int(fields[i], 16))) for i in (1, 2, 7)]
        prefix = bin(int(fields[7], 16)).count("1")
        found.append({"interface": fields[0], "destination": as_ip[0], "prefix": prefix, "gateway": as_ip[1]})
    return found


def port_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> List[int]:
    """The ephemeral ports this host's connections and listeners on port 0 use (Gloo's and NCCL's)."""
    try:
        with open(path) as handle:
            return [int(word) for word in handle.read().split()[:2]]
    except (OSError, ValueError):
        return []


def listen(seconds: float, expected: int = 0) -> None:
    """Listen on an ephemeral port on every address, print it, and accept (and close) connections until
    `expected` came (0: no count) or `seconds` passed: the other hosts' end of the TCP matrix. It also
    stops as soon as the ssh session that started it is gone (a line it writes cannot be written), so
    none is left behind to pass for a job."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("0.0.0.0", 0))
        sock.listen(64)
        print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
        sock.settimeout(0.2)
        deadline = time.monotonic() + seconds
        accepted = 0
        while time.monotonic() < deadline and not (expected and accepted >= expected):
            try:
                conn, _unused = sock.accept()
            except socket.timeout:
                try:
                    sys.stdout.write("\n")
                    sys.stdout.flush()
                except OSError:
                    return
                continue
            conn.close()
            accepted += 1


def connect_one(target: str, timeout: float) -> str:
    """``ok``, ``refused``, ``timed out`` or the error of a TCP connection to HOST:PORT."""
    host, _sep, port = target.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return "ok"
    except ConnectionRefusedError:
        return "refused"
    except socket.timeout:
        return "timed out"
    except OSError as err:
        return err.strerror or str(err)


def connect(targets: Sequence[str], timeout: float) -> Dict[str, str]:
    """connect_one for each of `targets` at once."""
    if not targets:
        return {}
    with ThreadPoolExecutor(max_workers=min(32, len(targets))) as pool:
        return dict(zip(targets, pool.map(lambda t: connect_one(t, timeout), targets)))


def launcher_processes() -> List[str]:
    """Command lines of the horovodrun launchers running in this container (not their ranks), and
    of the wrapper scripts horovod_launch starts them with (``<run dir>/horovod-launch.sh``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                argv = [a.decode(errors="replace") for a in handle.read().split(b"\0") if a]
        except OSError:
            continue
        if any(os.path.basename(a) == "horovodrun" for a in argv[:2]) or any(
            a.endswith("/horovod-launch.sh") for a in argv[:3]
        ):
            found.append(redact(" ".join(argv)))
    return sorted(found)


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            # pid (comm) state ppid ...; comm may hold spaces and parentheses.
            return int(handle.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def processes() -> List[Dict[str, object]]:
    """pid and command line of every process here except this probe and its ancestors."""
    mine, pid = set(), os.getpid()
    while pid > 1 and pid not in mine:
        mine.add(pid)
        pid = _parent(pid)
    found: List[Dict[str, object]] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in mine:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                args = " ".join(a.decode(errors="replace") for a in handle.read().split(b"\0") if a)
        except OSError:
            continue
        if args:  # kernel threads and zombies have none
            found.append({"pid": int(entry), "args": redact(args)})
    return sorted(found, key=lambda p: int(p["pid"]))  # type: ignore[call-overload]


def package_version(package: str) -> str:
    """The installed version of a Python distribution, "" without one: importlib.metadata from Python 3.8,
    setuptools' pkg_resources before it."""
    try:
        from importlib import metadata  # noqa: PLC0415 # novermin - Python 3.8
    except ImportError:
        import pkg_resources  # noqa: PLC0415 - Python 3.6 and 3.7 images

        try:
            return pkg_resources.get_distribution(package).version
        except pkg_resources.DistributionNotFound:
            return ""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return ""


def horovod_version() -> str:
    return package_version("horovod")


# What shapes a run besides Horovod, for the run's manifest: the frameworks, NCCL's Python wheels (torch
# from 2.0 on) and the guide's packages, read from their metadata without importing them.
PACKAGES = ("torch", "tensorflow", "tensorflow-gpu", "mxnet", "nvidia-nccl-cu11", "nvidia-nccl-cu12",
            "tensorboardX", "tqdm")  # fmt: skip
# Where images put NCCL's shared library (Horovod's images: libnccl2 from NVIDIA's repository).
NCCL_LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/local/cuda/lib64",
                     "/usr/local/nccl/lib", "/usr/lib64", "/usr/local/lib")  # fmt: skip
NCCL_LIBRARY_RE = re.compile(r"^libnccl\.so\.([0-9]+\.[0-9]+\.[0-9]+)$")


def packages(library_dirs: Sequence[str] = NCCL_LIBRARY_DIRS) -> Dict[str, str]:
    """The versions of PACKAGES installed here, and ``libnccl`` (the NCCL shared library's version)."""
    found = {name: version for name, version in ((n, package_version(n)) for n in PACKAGES) if version}
    for directory in library_dirs:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        versions = [m.group(1) for m in map(NCCL_LIBRARY_RE.match, names) if m]
        if versions:
            found["libnccl"] = max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))
            break
    return found


def marker_state(path: str, token: str) -> str:
    """ "ok" when `path` holds `token`, "missing" when there is no such file, "different" else.

    Root on a worker may replace the marker on the share: a link, a FIFO or a device there is not
    opened through or read (as plugins/modules/share_marker.py reads the site's markers)."""
    try:
        fd = os.open(path, READ_FLAGS)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return "not a regular file" if exc.errno == errno.ELOOP else f"unreadable: {exc.strerror}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        return "ok" if os.read(fd, 256).strip() == token.encode() else "different"
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    finally:
        os.close(fd)


def _run(argv: List[str], timeout: float) -> Tuple[int, str, str]:
    try:
        proc = subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def gpus(frameworks: Sequence[str] = ()) -> Dict[str, object]:
    """The GPUs this container sees (``devices``: index, name, compute capability), the CUDA version the
    driver supports and, when there is a GPU, what each of `frameworks` was built for (``frameworks``:
    version, cuda, arch_list, device_count, or error). No nvidia-smi: no GPU, nothing else is read."""
    result: Dict[str, object] = {"devices": [], "driver_cuda": "", "frameworks": {}, "error": ""}
    if not shutil.which("nvidia-smi"):
        return result
    rc, out, err = _run(NVIDIA_SMI_QUERY, 60)
    if rc != 0 and "compute_cap" in out + err:
        # A driver older than 510 cannot tell the compute capability: the GPUs without it.
        rc, out, err = _run([NVIDIA_SMI_QUERY[0], "--query-gpu=index,name", *NVIDIA_SMI_QUERY[2:]], 60)
        out = "".join(f"{line}, \n" for line in out.splitlines() if line.strip())
    if rc != 0:
        result["error"] = " ".join((err or out).split())[:300] or f"nvidia-smi exited {rc}"
        return result
    devices = []
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 3 and fields[0].isdigit():
            devices.append({"index": int(fields[0]), "name": fields[1], "compute_cap": fields[2]})
    result["devices"] = devices
    if not devices:
        return result
    match = DRIVER_CUDA_RE.search(_run(["nvidia-smi"], 60)[1])
    result["driver_cuda"] = match.group(1) if match else ""
    read: Dict[str, object] = {}
    for framework in frameworks:
        code = FRAMEWORK_GPU_CODE.get(framework)
        if code is None:
            continue
        read[framework] = python_json(code)
    result["frameworks"] = read
    return result


def python_json(code: str) -> Dict[str, object]:
    """What `code` prints as JSON on its last line, run in a python3 of its own (FRAMEWORK_GPU_CODE,
    TORCH_CODE), or ``{error}`` with the end of its output when it fails."""
    rc, out, err = _run([sys.executable, "-c", code], GPU_READ_TIMEOUT)
    try:
        if rc == 0:
            return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    return {"error": " ".join((err or out).split())[-300:] or f"exited {rc}"}


def writable(path: str) -> str:
    """ "ok" when root here may create files in `path` or, while it is missing, in the nearest directory
    above it that exists (where it would be created); else why not. access(2) asks the file system itself:
    a read-only mount (EROFS) or an NFS server that squashes root answers no."""
    here = path
    while not os.path.isdir(here):
        if os.path.lexists(here):
            return f"{here} is not a directory"
        parent = os.path.dirname(here)
        if parent == here:
            return "no directory above it exists"
        here = parent
    if os.access(here, os.W_OK | os.X_OK):  # novermin
        return "ok"
    try:
        read_only = bool(os.statvfs(here).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return f"{here} is on a file system mounted read-only here"
    return f"{here} is not writable by root here (its permissions, or an NFS export that squashes root)"


def rdma_devices(path: str = "/dev/infiniband") -> List[str]:
    """The RDMA devices this container sees (``uverbs0``, ``rdma_cm``, ...): what NCCL's InfiniBand and RoCE
    transport opens; none where docker_horovod did not pass /dev/infiniband or the host has no RDMA."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def probe(
    addresses: List[str],
    paths: List[str],
    markers: Sequence[Marker] = (),
    frameworks: Sequence[str] = (),
    writable_paths: Sequence[str] = (),
    *,
    with_torch: bool = False,
) -> Dict[str, object]:
    interfaces = interface_addresses()
    holders = {ip: name for name, ips in sorted(interfaces.items(), reverse=True) for ip in ips}
    resolved = {address: resolve(address) for address in addresses}
    report: Dict[str, object] = {
        "hostname": socket.gethostname(),
        "horovod_version": horovod_version(),
        "packages": packages(),
        "interfaces": interfaces,
        # For each address: what it resolves to here and which interface here holds it (None:
        # the address is another host's).
        "addresses": {a: {"ip": ip, "interface": holders.get(ip or "")} for a, ip in resolved.items()},
        "shm_bytes": shm_bytes(),
        "routes": routes(),
        "port_range": port_range(),
        "missing_paths": [p for p in paths if not os.path.isdir(p)],
        "launchers": launcher_processes(),
        "processes": processes(),
        "markers": {path: marker_state(path, token) for path, token in markers},
        "gpus": gpus(frameworks),
        "rdma": rdma_devices(),
        # Where the run writes, as this host's container may (the preflight asks the hosts of rank 0).
        "writable": {path: writable(path) for path in writable_paths},
    }
    if with_torch:
        report["torch"] = python_json(TORCH_CODE)
    return report


def own_source() -> str:
    """This program's code: run as ``python3 -c CODE``, CODE is the third item of its cmdline."""
    try:
        with open(f"/proc/{os.getpid()}/cmdline", "rb") as handle:
            argv = [a.decode() for a in handle.read().split(b"\0")]
    except OSError:
        argv = []
    if len(argv) > 2 and argv[1] == "-c":
        return argv[2]
    with open(__file__) as handle:
        return handle.read()


def build_key() -> Dict[str, object]:
    """What the answer of `horovodrun --check-build` depends on: Horovod's version, the horovodrun
    found on PATH and the directories Python imports from (installing or removing a package
    changes its directory's modification time)."""
    horovodrun = shutil.which("horovodrun") or ""
    stamps = {}
    for path in [horovodrun, *sys.path]:
        if path and os.path.exists(path):
            info = os.stat(path)
            stamps[path] = [info.st_mtime_ns, info.st_size, info.st_ino]
    return {"horovod_version": horovod_version(), "horovodrun": horovodrun, "stamps": stamps}


def check_build(cache: str = CHECK_BUILD_CACHE, timeout: float = 300) -> Dict[str, object]:
    """rc, stdout and stderr of `horovodrun --check-build`, from the cache when nothing it depends
    on changed since a run that succeeded (a failure is asked again every time)."""
    key = build_key()
    try:
        with open(cache) as handle:
            kept = json.load(handle)
        if kept.get("key") == key:
            return {**kept["result"], "cached": True}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    # Horovod before 0.19 prints the answer and leaves with os._exit(0), which drops what is still in
    # stdout's buffer when stdout is a pipe: unbuffered, it all arrives.
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(
            ["horovodrun", "--check-build"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=timeout,
            check=False,
            env=env,
        )
        result = {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
    except FileNotFoundError:
        result = {"rc": 127, "stdout": "", "stderr": "horovodrun: command not found"}
    except subprocess.TimeoutExpired:
        result = {"rc": 124, "stdout": "", "stderr": f"horovodrun --check-build gave no answer within {timeout:.0f} s"}
    if result["rc"] == 0 and result["stdout"].strip():
        try:
            os.makedirs(os.path.dirname(cache), mode=0o700, exist_ok=True)
            with open(cache + ".new", "w") as handle:
                json.dump({"key": key, "result": result}, handle)
            os.replace(cache + ".new", cache)
        except OSError:
            pass
    return {**result, "cached": False}


def probe_remote(
    ssh: List[str],
    address: str,
    paths: List[str],
    source: str,
    timeout: float,
    *,
    markers: Sequence[Marker] = (),
    frameworks: Sequence[str] = (),
    writable_paths: Sequence[str] = (),
    with_torch: bool = False,
) -> Dict[str, object]:
    """Run this program in the container at `address` over the containers' ssh; its rc and output."""
    args = ["--address", address] + [word for path in paths for word in ("--path", path)]
    args += [f"--writable={path}" for path in writable_paths]
    args += [word for path, token in markers for word in ("--marker", f"{path}={token}")]
    args += [f"--gpu-framework={framework}" for framework in frameworks]
    args += ["--torch"] if with_torch else []
    return run_remote(ssh, address, args, source, timeout)


def run_remote(ssh: List[str], address: str, args: List[str], source: str, timeout: float) -> Dict[str, object]:
    """Run this program (`source`) with `args` in the container at `address` over the containers' ssh: rc,
    stdout and stderr (rc 124 when it gave no answer within `timeout`)."""
    command = "python3 - " + " ".join(shlex.quote(a) for a in args)
    try:
        proc = subprocess.run(
            [*ssh, address, command],
            input=source,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"rc": 124, "stdout": "", "stderr": f"no answer within {timeout:.0f} s"}
    return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


# How long a listener of the TCP matrix waits for the others at most, and one connection may take.
LISTEN_SECONDS = 20
CONNECT_TIMEOUT = 3.0


def _remote_listener(ssh: List[str], address: str, source: str, expected: int) -> Tuple[Optional[int], str, object]:
    """A listener started in the container at `address`: its port (None with the error) and its process."""
    proc = subprocess.Popen(
        [*ssh, address, f"python3 - --listen {LISTEN_SECONDS} --expect {expected}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    proc.stdin.write(source)  # type: ignore[union-attr]
    proc.stdin.close()  # type: ignore[union-attr]
    line = proc.stdout.readline()  # type: ignore[union-attr]
    try:
        return int(json.loads(line)["port"]), "", proc
    except (ValueError, KeyError, TypeError):
        proc.kill()
        err = proc.stderr.read()  # type: ignore[union-attr]
        proc.wait()
        return None, " ".join((err or line).split())[-300:] or f"rc {proc.returncode}", None


def tcp_matrix(
    hosts: List[Tuple[str, str]], local_names: Sequence[str], ssh: List[str], source: str, timeout: float
) -> Dict[str, object]:
    """Whether every host's container can open a TCP connection to every other's on an ephemeral port, as
    Gloo's and NCCL's sockets do (ssh alone working does not say it): ``ports`` of each host's listener,
    ``from`` (source host -> target host -> ok, refused, timed out or the error) and ``errors`` (a host
    whose listener or connections could not be started)."""
    ports: Dict[str, int] = {}
    errors: Dict[str, str] = {}
    processes = []
    local = None
    try:
        for name, address in hosts:
            if name in local_names:
                if local is None:
                    local = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    local.bind(("0.0.0.0", 0))
                    local.listen(64)  # the kernel completes the handshakes; nothing needs to accept
                ports[name] = local.getsockname()[1]
                continue
            port, error, proc = _remote_listener(ssh, address, source, len(hosts) - 1)
            if proc is not None:
                processes.append(proc)
            if port is None:
                errors[name] = f"no listener: {error}"
            else:
                ports[name] = port
        targets = {name: f"{address}:{ports[name]}" for name, address in hosts if name in ports}

        def from_host(host: Tuple[str, str]) -> Dict[str, str]:
            name, address = host
            if name in errors:  # its listener did not start over ssh: nor would its connections
                return {}
            wanted = [t for other, t in targets.items() if other != name]
            if name in local_names:
                return connect(wanted, CONNECT_TIMEOUT)
            answer = run_remote(ssh, address, [f"--connect={t}" for t in wanted], source, timeout)
            try:
                return dict(json.loads(str(answer["stdout"])))
            except (ValueError, TypeError) as exc:
                said = " ".join(str(answer["stderr"]).split())[-300:]
                errors[name] = f"no connections tried: {said or exc}"
                return {}

        with ThreadPoolExecutor(max_workers=min(32, len(hosts))) as pool:
            found = dict(zip([n for n, _unused in hosts], pool.map(from_host, hosts)))
    finally:
        for proc in processes:
            proc.kill()  # type: ignore[attr-defined]
            proc.wait()  # type: ignore[attr-defined]
        if local is not None:
            local.close()
    by_target = {t: other for other, t in targets.items()}
    matrix = {name: {by_target.get(t, t): state for t, state in row.items()} for name, row in found.items()}
    return {"ports": ports, "from": matrix, "errors": errors}


@contextlib.contextmanager
def share_marker(directories: Sequence[str]) -> Iterator[List[Marker]]:
    """A marker file with a fresh token in each of `directories` (the share, the artifact directory)
    while the hosts are probed; a directory that is missing or that this host cannot write gets none."""
    token = secrets.token_hex(16)
    markers: List[Marker] = []
    try:
        for directory in directories:
            if not directory or not os.path.isdir(directory):
                continue
            path = os.path.join(directory, f".multinode-horovod-preflight-{token[:12]}")
            # A fresh name, created exclusively: never written through what someone planted there.
            try:
                fd = os.open(path, CREATE_FLAGS, 0o644)
            except OSError:
                continue
            markers.append((path, token))
            with os.fdopen(fd, "w") as handle:
                handle.write(token + "\n")
        yield markers
    finally:
        for path, _unused in markers:
            with contextlib.suppress(OSError):
                os.unlink(path)


def survey(
    hosts: List[Tuple[str, str]],
    paths: List[str],
    ssh: List[str],
    timeout: float,
    with_build: bool,
    *,
    shares: Sequence[str] = (),
    frameworks: Sequence[str] = (),
    writable_paths: Sequence[str] = (),
    with_tcp: bool = False,
    with_torch: bool = False,
) -> Dict[str, object]:
    """Probe here, tell which hosts are this one, and probe every other host in parallel; every host
    also reads back the markers written first in `shares`. With `with_tcp`, then the TCP matrix between
    the hosts that answered."""
    with share_marker(shares) as markers:
        report = _survey(
            hosts,
            paths,
            ssh,
            timeout,
            with_build,
            markers=markers,
            frameworks=frameworks,
            writable_paths=writable_paths,
            with_torch=with_torch,
        )
    if with_tcp and len(hosts) > 1:
        answered = {r["name"] for r in report["remotes"] if r["rc"] == 0} | set(report["local_names"])  # type: ignore[index,union-attr]
        reachable = [h for h in hosts if h[0] in answered]
        report["tcp"] = tcp_matrix(reachable, report["local_names"], ssh, own_source(), timeout)  # type: ignore[arg-type]
    return report


def _survey(
    hosts: List[Tuple[str, str]],
    paths: List[str],
    ssh: List[str],
    timeout: float,
    with_build: bool,
    *,
    markers: Sequence[Marker],
    frameworks: Sequence[str] = (),
    writable_paths: Sequence[str] = (),
    with_torch: bool = False,
) -> Dict[str, object]:
    addresses_of = [address for _unused, address in hosts]
    local = probe(addresses_of, paths, markers, frameworks, writable_paths, with_torch=with_torch)
    addresses = local["addresses"]
    local_names = [name for name, address in hosts if addresses[address]["interface"] is not None]  # type: ignore[index]
    others = [(name, address) for name, address in hosts if name not in local_names]
    source = own_source() if others else ""
    # `horovodrun --check-build` (seconds when not cached) runs while the other hosts answer.
    with ThreadPoolExecutor(max_workers=min(32, len(others)) + 1) as pool:
        build = pool.submit(check_build) if with_build else None

        def ask(host: Tuple[str, str]) -> Dict[str, object]:
            return {
                "name": host[0],
                "address": host[1],
                **probe_remote(
                    ssh,
                    host[1],
                    paths,
                    source,
                    timeout,
                    markers=markers,
                    frameworks=frameworks,
                    writable_paths=writable_paths,
                    with_torch=with_torch,
                ),
            }

        remotes = list(pool.map(ask, others))
    report: Dict[str, object] = {
        "local": local,
        "local_names": local_names,
        "remotes": remotes,
    }
    if build is not None:
        report["check_build"] = build.result()
    return report


def ssh_found(wrapper: str) -> str:
    """The ssh horovodrun runs here once the launch script put the wrapper's directory first on PATH
    ("" when there is none): the wrapper itself while it is there (the host directory ssh_trust fills,
    mounted in the container), else whatever ssh the PATH holds."""
    path = os.pathsep.join([os.path.dirname(wrapper), os.environ.get("PATH", "")])
    return shutil.which("ssh", path=path) or ""


def host_entry(text: str) -> Tuple[str, str]:
    name, sep, address = text.rpartition("=")
    if not sep or not name or not address:
        raise argparse.ArgumentTypeError(f"not NAME=ADDRESS: {text!r}")
    return name, address


def marker_entry(text: str) -> Tuple[str, str]:
    path, sep, token = text.rpartition("=")
    if not sep or not path or not token:
        raise argparse.ArgumentTypeError(f"not PATH=TOKEN: {text!r}")
    return path, token


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--address", action="append", default=[], help="an address to resolve and locate here")
    parser.add_argument("--path", action="append", default=[], help="a directory that must exist here")
    parser.add_argument(
        "--writable", action="append", default=[], help="a directory the run writes: whether root here may (repeatable)"
    )
    parser.add_argument(
        "--marker", action="append", default=[], type=marker_entry, help="PATH=TOKEN: a marker file to read back here"
    )
    parser.add_argument(
        "--share-marker",
        action="append",
        default=[],
        help="on the master: a shared directory where every host reads back a marker (repeatable)",
    )
    parser.add_argument(
        "--host", action="append", default=[], type=host_entry, help="NAME=ADDRESS of a host of the run (on the master)"
    )
    parser.add_argument("--ssh-argv", default="[]", help="JSON list: the ssh command that reaches the other hosts")
    parser.add_argument("--remote-timeout", type=float, default=90, help="seconds one other host may take to answer")
    parser.add_argument("--check-build", action="store_true", help="add horovodrun --check-build (cached)")
    parser.add_argument("--torch", action="store_true", help="add what a torchrun run needs of torch (every host)")
    parser.add_argument(
        "--gpu-framework",
        action="append",
        default=[],
        choices=sorted(FRAMEWORK_GPU_CODE),
        help="where the container sees a GPU: read which GPUs and CUDA this framework was built for (repeatable)",
    )
    parser.add_argument(
        "--ssh-wrapper", default="", help="on the master: the ssh wrapper the launch script puts first on PATH"
    )
    parser.add_argument(
        "--tcp-matrix", action="store_true", help="on the master: every host connects to every other's ephemeral port"
    )
    parser.add_argument("--listen", type=float, default=0, help="listen on an ephemeral port for this many seconds")
    parser.add_argument("--expect", type=int, default=0, help="with --listen: stop after this many connections")
    parser.add_argument("--connect", action="append", default=[], help="HOST:PORT to open a TCP connection to")
    args = parser.parse_args(argv)
    if args.listen:
        listen(args.listen, args.expect)
        return 0
    if args.connect:
        print(json.dumps(connect(args.connect, CONNECT_TIMEOUT), sort_keys=True))
        return 0
    if args.host:
        report = survey(
            args.host,
            args.path,
            json.loads(args.ssh_argv),
            args.remote_timeout,
            args.check_build,
            shares=args.share_marker,
            frameworks=args.gpu_framework,
            writable_paths=args.writable,
            with_tcp=args.tcp_matrix,
            with_torch=args.torch,
        )
        if args.ssh_wrapper:
            report["ssh"] = ssh_found(args.ssh_wrapper)
    else:
        report = probe(args.address, args.path, args.marker, args.gpu_framework, args.writable, with_torch=args.torch)
        if args.check_build:
            report["check_build"] = check_build()
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
