# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""The site on real kernels (UML instances): what one worker writes the master and the other worker
read, only the workers may mount; every container reads what the master wrote and the master reaches
every node over the containers' ssh; a container started before its host mounted the share runs
nothing until the share arrives, and the site's check names a container that does not see it; a
rebooted worker comes back with its mount (fstab) and its share in the container.

The tests reach each machine by name, so they run once (not once per host). Those marked LONG (the
reboot, the container started before its share, the site naming a container without it, root_squash, the
teardown) run in make test-all only.
"""

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import testinfra

SHARE = "/data1/share"
# The site's default horovod_artifact_dir: what every node executes, exported read-only to the workers.
ARTIFACTS = "/data1/artifacts"
ARCHIVE = f"{ARTIFACTS}/images/sshbox.tar"
# The site's default horovod_nfs_export_options, and the artifact directory's (ro instead of rw).
EXPORT_OPTIONS = {"rw", "sync", "no_subtree_check", "no_root_squash"}
ARTIFACT_EXPORT_OPTIONS = {"ro", "sync", "no_subtree_check", "no_root_squash"}
CONTAINER = "horovod"
SSH_PORT = 12345
REPO = Path(os.environ.get("MNH_REPO", Path(__file__).resolve().parents[3]))


# The long fault and operations tests: make test-all only; make test has a 40-minute budget.
LONG = pytest.mark.skipif(os.environ.get("MNH_TESTS") != "all", reason="make test-all only (MNH_TESTS=all)")


@pytest.fixture(scope="module")
def hosts(request):
    inventory = request.config.option.ansible_inventory
    return {
        name: testinfra.get_host(f"ansible://{name}", ansible_inventory=inventory)
        for name in ("master", "worker1", "worker2", "outsider")
    }


@pytest.fixture(scope="module")
def inventory(request):
    return request.config.option.ansible_inventory


@pytest.fixture(scope="module")
def addr(hosts):
    return {name: host.ansible.get_variables()["ansible_host"] for name, host in hosts.items()}


def run_ok(host, command):
    result = host.run(command)
    assert result.rc == 0, f"{command!r} failed ({result.rc}): {result.stderr}"
    return result.stdout


def in_container(host, command):
    """rc, stdout and stderr of `command` (a shell line) in the node's container."""
    return host.run(f"docker exec {CONTAINER} sh -c {command!r}")


def wait_until(what, check, timeout=120):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(2)


def sshd_listens(host):
    return host.run(f"ss -Hltn 'sport = :{SSH_PORT}'").stdout.strip() != ""


def master_reaches(hosts, addr, node):
    """Whether the master's container logs in to `node` over the containers' ssh (pinned, key only)."""
    # `|| exit 1`: testinfra takes ssh's own 255 for a failure of its connection to the machine.
    out = in_container(hosts["master"], f"ssh -n -o BatchMode=yes -o ConnectTimeout=10 {addr[node]} hostname || exit 1")
    return out.rc == 0 and out.stdout.strip() == node


def nfs_mount(host, mountpoint=SHARE):
    """(source, fstype, options) of the mount at `mountpoint`, or None."""
    result = host.run(f"findmnt --noheadings --output SOURCE,FSTYPE,OPTIONS --mountpoint {mountpoint}")
    if result.rc != 0:
        return None
    source, fstype, options = result.stdout.split()
    return source, fstype, set(options.split(","))


def exports(host):
    """{path: {client: options}} of what the server exports now."""
    found = {}
    for line in run_ok(host, "exportfs -s").splitlines():
        path, _unused, rest = line.partition(" ")
        for spec in rest.split():
            client, _unused, options = spec.partition("(")
            found.setdefault(path, {})[client] = set(options.rstrip(")").split(","))
    return found


def test_master_exports_the_share_to_the_workers_only(hosts, addr):
    found = exports(hosts["master"])
    for path, wanted in ((SHARE, EXPORT_OPTIONS), (ARTIFACTS, ARTIFACT_EXPORT_OPTIONS)):
        assert set(found[path]) == {addr["worker1"], addr["worker2"]}, path
        for options in found[path].values():
            assert options >= wanted, (path, options)
    assert hosts["master"].service("nfs-server").is_enabled
    assert hosts["master"].file("/etc/exports.d/multinode-horovod.exports").contains(addr["worker1"])


@pytest.mark.parametrize("worker", ["worker1", "worker2"])
def test_worker_has_the_master_share_mounted(hosts, addr, worker):
    mount = nfs_mount(hosts[worker])
    assert mount is not None, f"nothing is mounted at {SHARE} on {worker}"
    source, fstype, options = mount
    assert source == f"{addr['master']}:{SHARE}"
    assert fstype == "nfs4"
    assert {"rw", "hard", "nosuid", "nodev"} <= options
    fstab = [line.split() for line in hosts[worker].file("/etc/fstab").content_string.splitlines()]
    assert [f"{addr['master']}:{SHARE}", SHARE, "nfs"] in [fields[:3] for fields in fstab]
    # The image's own root line is foreign to the role and must survive.
    assert ["/dev/ubda", "/", "ext4"] in [fields[:3] for fields in fstab]


@pytest.mark.parametrize("worker", ["worker1", "worker2"])
def test_worker_has_the_artifact_directory_mounted_read_only(hosts, addr, worker):
    mount = nfs_mount(hosts[worker], ARTIFACTS)
    assert mount is not None, f"nothing is mounted at {ARTIFACTS} on {worker}"
    source, fstype, options = mount
    assert (source, fstype) == (f"{addr['master']}:{ARTIFACTS}", "nfs4")
    assert {"ro", "nosuid", "nodev"} <= options


@pytest.mark.parametrize("worker", ["worker1", "worker2"])
def test_root_on_a_worker_cannot_change_what_every_node_executes(hosts, worker):
    """Root on a worker, on the host and in its container, tries to plant a file and to replace the
    image archive in the artifact directory: the export is read-only, both fail."""
    before = run_ok(hosts["master"], f"sha256sum {ARCHIVE}")
    for where, run in (("host", hosts[worker].run), ("container", lambda c: in_container(hosts[worker], c))):
        planted = run(f"echo planted > {ARTIFACTS}/planted-by-{worker}")
        assert planted.rc != 0, f"root in {worker}'s {where} wrote the artifact directory"
        assert "Read-only file system" in planted.stderr, planted.stderr
        replaced = run(f"cp /etc/os-release {ARCHIVE}")
        assert replaced.rc != 0, f"root in {worker}'s {where} replaced the image archive"
        assert "Read-only file system" in replaced.stderr, replaced.stderr
    assert run_ok(hosts["master"], f"sha256sum {ARCHIVE}") == before
    assert not hosts["master"].file(f"{ARTIFACTS}/planted-by-{worker}").exists
    # The share itself stays writable for the workers (their data, checkpoints, logs).
    run_ok(hosts[worker], f"touch {SHARE}/written-by-{worker} && rm {SHARE}/written-by-{worker}")


def test_file_written_on_worker1_is_read_on_master_and_worker2(hosts):
    token = uuid.uuid4().hex
    path = f"{SHARE}/probe-{token}"
    run_ok(hosts["worker1"], f"echo {token} > {path} && sync")
    try:
        # On the master this is its own disk: the bytes really went to the server.
        assert run_ok(hosts["master"], f"cat {path}").strip() == token
        assert run_ok(hosts["worker2"], f"cat {path}").strip() == token
        # no_root_squash: root on a worker stays root on the share.
        assert run_ok(hosts["master"], f"stat -c %u {path}").strip() == "0"
    finally:
        hosts["master"].run(f"rm -f {path}")
    # NFS clients cache directory entries for up to acdirmax (60 s): the removal shows within that.
    wait_until("the removal on worker2", lambda: not hosts["worker2"].file(path).exists, 65)


def test_outsider_is_refused(hosts, addr):
    outsider = hosts["outsider"]
    # The outsider reaches the server's mountd and sees who may mount: the refusal below is the
    # export list at work, not a network problem.
    listing = run_ok(outsider, f"showmount --exports --no-headers {addr['master']}")
    allowed = {line.split()[0]: set(line.split()[1].split(",")) for line in listing.splitlines() if line.strip()}
    assert allowed == {SHARE: {addr["worker1"], addr["worker2"]}, ARTIFACTS: {addr["worker1"], addr["worker2"]}}
    run_ok(outsider, "mkdir -p /mnt/probe")
    for path in (SHARE, ARTIFACTS):
        for version in ("4.2", "3"):
            result = outsider.run(f"mount -t nfs -o nfsvers={version},retry=0 {addr['master']}:{path} /mnt/probe")
            assert result.rc != 0, f"the outsider mounted {path} with NFS {version}"
            assert "access denied" in result.stderr, result.stderr
            assert outsider.run("findmnt --mountpoint /mnt/probe").rc == 1


def test_every_container_reads_what_the_master_wrote(hosts):
    token = uuid.uuid4().hex
    path = f"{SHARE}/container-{token}"
    run_ok(hosts["master"], f"echo {token} > {path}")
    try:
        for name in ("master", "worker1", "worker2"):
            out = in_container(hosts[name], f"cat {path}")
            assert out.rc == 0 and out.stdout.strip() == token, f"{name}: {out.stderr}"
    finally:
        hosts["master"].run(f"rm -f {path}")


@pytest.mark.parametrize("worker", ["worker1", "worker2"])
def test_the_master_reaches_every_worker_over_the_containers_ssh(hosts, addr, worker):
    assert master_reaches(hosts, addr, worker)


def test_docker_starts_after_the_network_file_systems(hosts):
    for name in ("master", "worker1", "worker2"):
        after = run_ok(hosts[name], "systemctl show docker.service --property After --value").split()
        assert "remote-fs.target" in after, f"{name}: docker.service is not ordered after remote-fs.target"
        # The machine's own Docker configuration (the bed's: no iptables) is kept beside the role's.
        assert '"iptables": false' in hosts[name].file("/etc/docker/daemon.json").content_string


@LONG
def test_a_container_started_before_its_share_runs_nothing_until_the_share_arrives(hosts, addr):
    worker = hosts["worker2"]
    token = uuid.uuid4().hex
    path = f"{SHARE}/late-{token}"
    run_ok(hosts["master"], f"echo {token} > {path}")
    # As at boot when Docker wins the race against the NFS mount: the container starts while the
    # host's share is not mounted.
    run_ok(worker, f"docker stop {CONTAINER} && umount {SHARE} && docker start {CONTAINER}")
    try:
        time.sleep(6)  # three rounds of the supervisor's loop
        assert not sshd_listens(worker), "sshd runs in a container that has no share"
        assert in_container(worker, f"cat {path}").rc != 0
        assert "waiting for the share" in run_ok(worker, f"docker logs {CONTAINER} 2>&1 | tail -n 5")
        assert not master_reaches(hosts, addr, "worker2")
        # The share arrives on the host: it appears in the running container (rslave), sshd starts.
        run_ok(worker, f"mount {SHARE}")
        wait_until("the share in worker2's container", lambda: in_container(worker, f"cat {path}").rc == 0, 30)
        assert in_container(worker, f"cat {path}").stdout.strip() == token
        wait_until("sshd in worker2's container", lambda: sshd_listens(worker), 30)
        assert master_reaches(hosts, addr, "worker2")
    finally:
        worker.run(f"findmnt {SHARE} || mount {SHARE}")
        hosts["master"].run(f"rm -f {path}")


@LONG
def test_the_site_names_a_container_that_does_not_see_the_share(hosts, inventory):
    worker = hosts["worker2"]
    # The host has its share, the container does not (its own mount namespace only).
    pid = run_ok(worker, f"docker inspect --format {{{{.State.Pid}}}} {CONTAINER}").strip()
    run_ok(worker, f"nsenter --target {pid} --mount umount {SHARE}")
    try:
        site = subprocess.run(
            [
                str(Path(sys.executable).parent / "ansible-playbook"),
                *("-i", inventory, str(REPO / "site.yml")),
                *("--tags", "docker_horovod", "--skip-tags", "launch", "--limit", "master,worker2"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        said = " ".join((site.stdout + site.stderr).split())
        assert site.returncode != 0, said[-2000:]
        assert f"worker2: the container {CONTAINER} does not see the master's share at {SHARE}" in said, said[-2000:]
    finally:
        run_ok(worker, f"docker restart {CONTAINER}")
    wait_until("sshd in worker2's container", lambda: sshd_listens(worker), 60)


# --- root on a worker against the master (SECURITY.md, "Root on a worker cannot change what every node
# executes"): each attack is made as a worker's root makes it, over the real NFS export.

SSHD_DIR = "/etc/multinode-horovod/sshd"
TRUST_DIR = "/etc/multinode-horovod/ssh"
# Names the site's storage checks wrote with `printf >` as the master's root before they used
# multinode.horovod.share_marker (and the container check compared device and inode instead).
OLD_MARKERS = (".multinode-horovod-container-check", ".multinode-horovod-shared-check")


def ansible(tool, inventory, *args):
    """An Ansible command of the venv against the scenario's inventory: (the run, its output on one line)."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / tool), "-i", inventory, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".cache" / "collections")},
    )
    return done, " ".join((done.stdout + done.stderr).split())


def test_a_link_a_worker_plants_on_the_share_is_never_written_through(hosts, inventory):
    """Root on worker1 plants, on the share, links to a file of the master's host: at the names the
    site's storage checks used, and at the very name share_marker is about to create. The site runs,
    the marker write refuses the planted name saying nothing was written through it, and the target
    is unchanged."""
    master, worker = hosts["master"], hosts["worker1"]
    target = "/etc/multinode-horovod-attack-target"
    run_ok(master, f"echo 'the master own file' > {target}")
    token = uuid.uuid4().hex
    planted = [*OLD_MARKERS, f".multinode-horovod-check-{token}"]
    for name in planted:
        run_ok(worker, f"ln -sfn {target} {SHARE}/{name}")
    try:
        # The links really are on the master's disk, as symbolic links (NFS made them for root on worker1).
        assert run_ok(master, f"readlink {SHARE}/{OLD_MARKERS[0]}").strip() == target
        done, said = ansible("ansible-playbook", inventory, str(REPO / "site.yml"), "--tags", "storage")
        assert done.returncode == 0, said[-3000:]
        args = json.dumps({"path": [SHARE], "token": token, "state": "present"})
        done, said = ansible("ansible", inventory, "master", "-m", "multinode.horovod.share_marker", "-a", args)
        assert done.returncode != 0, said
        assert "is there already" in said and "nothing was written through it" in said, said
        assert run_ok(master, f"cat {target}") == "the master own file\n"
    finally:
        for name in planted:
            master.run(f"rm -f {SHARE}/{name}")
        master.run(f"rm -f {target}")


def test_a_host_key_file_with_a_wildcard_line_is_refused_on_every_node(hosts, inventory):
    """Root on worker1 writes a file into its own container host key directory whose second line, copied
    into known_hosts, would pin a key for any host: ssh_trust stops on every node, naming worker1 and the
    file, and no node's files change."""
    nodes = ("master", "worker1", "worker2")
    worker = hosts["worker1"]
    planted = f"{SSHD_DIR}/ssh_host_foo_key.pub"
    key = " ".join(run_ok(hosts["master"], f"cat {SSHD_DIR}/ssh_host_ed25519_key.pub").split()[:2])

    def trust_files(host):
        out = run_ok(host, f"find {TRUST_DIR} -type f -exec sha256sum {{}} +")
        return {path: digest for digest, path in (line.split(None, 1) for line in out.splitlines())}

    before = {name: trust_files(hosts[name]) for name in nodes}
    assert all(f"{TRUST_DIR}/known_hosts" in files for files in before.values()), before
    run_ok(worker, f"printf 'ssh-foo AAAA\\n* %s\\n' '{key}' > {planted}")
    try:
        done, said = ansible(
            "ansible-playbook", inventory, str(REPO / "site.yml"), "--tags", "ssh_trust", "--skip-tags", "launch"
        )
        assert done.returncode != 0, said[-2000:]
        header = "TASK [multinode.horovod.ssh_trust : Refuse host key files that are not one public key each]"
        assert header in done.stdout, said[-3000:]
        # Every node fails with the message (Ansible prints a failure on stdout or stderr, by its settings).
        refusal = f"worker1: {planted} holds 2 lines, not one key on one line"
        for name in nodes:
            assert re.search(rf"fatal: \[{name}\]: FAILED!.{{0,4000}}?{re.escape(refusal)}", said), (
                name,
                said[said.find(header) :][:4000],
            )
        assert {name: trust_files(hosts[name]) for name in nodes} == before
        for name in nodes:
            assert f"* {key}" not in run_ok(hosts[name], f"cat {TRUST_DIR}/known_hosts")
    finally:
        worker.run(f"rm -f {planted}")
    assert worker.run(f"test -e {planted}").rc != 0


def test_training_code_a_worker_can_write_is_refused_before_any_change(hosts, inventory):
    """Root on worker1 can write the share, so a train command on it would run what the worker wrote as
    root in the master's container (which holds the cluster key): the gate refuses it, naming the
    setting, before any host is touched."""
    script = f"{SHARE}/code/train.py"
    run_ok(hosts["worker1"], f"mkdir -p {SHARE}/code && echo 'print(1)' > {script}")
    try:
        assert run_ok(hosts["master"], f"cat {script}").strip() == "print(1)"
        command = json.dumps({"horovod_train_command": ["python3", script]})
        done, said = ansible("ansible-playbook", inventory, str(REPO / "site.yml"), "--tags", "launch", "-e", command)
        assert done.returncode != 0, said[-2000:]
        assert "Fix the inventory first (nothing was changed)" in said, said[-3000:]
        assert "horovod_train_command" in said and script in said, said[-3000:]
        assert "Validate the inventory" in said and "TASK [multinode.horovod.horovod_launch" not in said
    finally:
        hosts["master"].run(f"rm -rf {SHARE}/code")


@LONG
def test_the_site_works_with_root_squash_on_the_share(hosts, addr, inventory):
    """SECURITY.md's advice to take root's power over the share from the workers: the site converges with
    root_squash (twice, the second run changing nothing), root on a worker then writes the share as
    nobody and cannot write the master's root-owned files, and every container still sees the share.
    The site's defaults are put back at the end."""
    squashed = json.dumps({"horovod_nfs_export_options": ["rw", "sync", "no_subtree_check", "root_squash"]})
    master, worker = hosts["master"], hosts["worker1"]
    try:
        for run in ("first", "second"):
            done, said = ansible(
                "ansible-playbook", inventory, str(REPO / "site.yml"), "--skip-tags", "launch", "-e", squashed
            )
            assert done.returncode == 0, f"{run} run: {said[-3000:]}"
        changed = [int(n) for n in re.findall(r"\bchanged=(\d+)", done.stdout)]
        assert changed and sum(changed) == 0, said[-3000:]
        for path in (SHARE, ARTIFACTS):
            for client in (addr["worker1"], addr["worker2"]):
                options = exports(master)[path][client]
                assert "root_squash" in options and "no_root_squash" not in options, (path, client, options)
        # What the workers write goes where nobody may write, and is nobody's; the master's own files are not theirs.
        run_ok(master, f"install -d -o nobody -g nogroup -m 0755 {SHARE}/squashed")
        run_ok(worker, f"echo data > {SHARE}/squashed/from-worker1 && sync")
        assert run_ok(master, f"stat -c %U {SHARE}/squashed/from-worker1").strip() == "nobody"
        refused = worker.run(f"touch {SHARE}/by-root-on-worker1")
        assert refused.rc != 0 and "Permission denied" in refused.stderr, refused.stderr
        assert in_container(worker, f"cat {SHARE}/squashed/from-worker1").stdout.strip() == "data"
    finally:
        master.run(f"rm -rf {SHARE}/squashed {SHARE}/by-root-on-worker1")
        done, said = ansible("ansible-playbook", inventory, str(REPO / "site.yml"), "--skip-tags", "launch")
        assert done.returncode == 0, said[-3000:]
    assert "no_root_squash" in exports(master)[SHARE][addr["worker1"]]


def boot_id(host):
    """The kernel's boot id, or None while the machine does not answer (testinfra raises then)."""
    try:
        result = host.run("cat /proc/sys/kernel/random/boot_id")
    except RuntimeError:
        return None
    return result.stdout.strip() if result.rc == 0 else None


@LONG
def test_worker_comes_back_after_reboot_with_its_share_in_the_container(hosts, addr):
    worker = hosts["worker1"]
    token = uuid.uuid4().hex
    path = f"{SHARE}/reboot-{token}"
    run_ok(hosts["master"], f"echo {token} > {path}")
    before = boot_id(worker)
    assert before
    # Reboot a second after ssh returns, so the command itself succeeds.
    run_ok(worker, "systemd-run --on-active=1 --timer-property=AccuracySec=100ms systemctl reboot")
    deadline = time.monotonic() + 240
    after = before
    while after in (before, None):
        assert time.monotonic() < deadline, "worker1 did not come back within 240 s after reboot"
        time.sleep(3)
        after = boot_id(worker)
    # Boot may finish a little after sshd answers: wait for the remote-fs target, bounded.
    run_ok(worker, "timeout 120 sh -c 'until systemctl is-active --quiet remote-fs.target; do sleep 1; done'")
    after_boot = f"{SHARE}/after-reboot-{token}"
    try:
        mount = nfs_mount(worker)
        assert mount is not None, f"{SHARE} is not mounted after the reboot"
        assert mount[1] == "nfs4"
        assert run_ok(worker, f"cat {path}").strip() == token
        # Docker brought the container back (its restart policy) with the share in it: a file the
        # master writes now is there, not an empty mount point; the master reaches it again.
        run_ok(hosts["master"], f"echo {token} > {after_boot}")
        wait_until("worker1's container", lambda: in_container(worker, f"cat {after_boot}").rc == 0, 120)
        assert in_container(worker, f"cat {after_boot}").stdout.strip() == token
        wait_until("sshd in worker1's container", lambda: sshd_listens(worker), 60)
        assert master_reaches(hosts, addr, "worker1")
        assert master_reaches(hosts, addr, "worker2")
    finally:
        hosts["master"].run(f"rm -f {path} {after_boot}")


FOREIGN_EXPORT = "/srv/foreign-export"
FOREIGN_FSTAB = "LABEL=scratch /scratch ext4 defaults,nofail 0 2"


def teardown(inventory, *extra):
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            *("-i", inventory, str(REPO / "playbooks" / "teardown.yml"), *extra),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


@LONG
def test_teardown_removes_the_nfs_half_and_keeps_what_is_not_the_collections(hosts, addr, inventory):
    """playbooks/teardown.yml on real kernels (the lab has no NFS): the workers' mounts and fstab lines
    and the master's exports go, a foreign export and fstab line and the share's data stay, a second
    teardown changes nothing. Runs last: the machines are left torn down."""
    master = hosts["master"]
    run_ok(
        master,
        f"mkdir -p {FOREIGN_EXPORT} && echo '{FOREIGN_EXPORT} {addr['outsider']}(ro)' > /etc/exports.d/foreign.exports",
    )
    run_ok(master, "exportfs -ra && echo kept > /data1/share/data-kept")
    for worker in ("worker1", "worker2"):
        run_ok(hosts[worker], f"grep -qxF '{FOREIGN_FSTAB}' /etc/fstab || echo '{FOREIGN_FSTAB}' >> /etc/fstab")
    first = teardown(inventory)
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    assert not master.file("/etc/exports.d/multinode-horovod.exports").exists
    exported = exports(master)
    assert SHARE not in exported and ARTIFACTS not in exported, exported
    assert set(exported[FOREIGN_EXPORT]) == {addr["outsider"]}
    assert run_ok(master, "cat /data1/share/data-kept").strip() == "kept"
    assert master.file(ARCHIVE).exists
    for worker in ("worker1", "worker2"):
        host = hosts[worker]
        assert nfs_mount(host, SHARE) is None and nfs_mount(host, ARTIFACTS) is None, worker
        fstab = host.file("/etc/fstab").content_string
        assert addr["master"] not in fstab, fstab
        assert FOREIGN_FSTAB in fstab and "/dev/ubda / ext4" in fstab, fstab
        assert host.run(f"docker inspect {CONTAINER}").rc != 0, f"{worker} still runs the container"
        assert not host.file("/etc/multinode-horovod").exists
        assert not host.file("/etc/systemd/system/docker.service.d/multinode-horovod-share.conf").exists
    second = teardown(inventory)
    recaps = [line for line in second.stdout.splitlines() if " : ok=" in line]
    assert second.returncode == 0 and recaps and all(" changed=0 " in line for line in recaps), second.stdout[-3000:]
