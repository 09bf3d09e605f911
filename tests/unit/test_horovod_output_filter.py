# Copyright: multinode.horovod contributors
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for plugins/filter/horovod_output.py (what horovodrun prints), imported from this checkout."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError
from checkout import REPO, load

PLUGIN = REPO / "plugins" / "filter" / "horovod_output.py"
ho = load("plugins/filter/horovod_output.py", "horovod_output_filter")

CHECK_BUILD = """
Horovod v0.28.1:

Available Frameworks:
    [ ] TensorFlow
    [X] PyTorch
    [ ] MXNet

Available Controllers:
    [ ] MPI
    [X] Gloo

Available Tensor Operations:
    [ ] NCCL
    [ ] DDL
    [ ] CCL
    [ ] MPI
    [X] Gloo
"""

GLOO_FAILURE = """\
[1]<stdout>:rank 1 ok
Process 2 exit with status code 1.
Terminating remaining workers after failure of Process 2.
Process 0 exit with status code 143.
Traceback (most recent call last):
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job \
to be terminated. The first process to do so was:
Process name: 2
Exit code: 1
"""


def test_filters_are_registered():
    filters = ho.FilterModule().filters()
    assert set(filters) == {"horovod_failed_rank", "horovod_rank_dir", "horovod_check_build"}
    assert filters["horovod_failed_rank"] is ho.failed_rank


def test_the_host_list_and_output_filters_are_apart_and_keep_their_names():
    hosts = load("plugins/filter/horovod_hosts.py", "horovod_hosts_filter_names").FilterModule().filters()
    output = ho.FilterModule().filters()
    assert not set(hosts) & set(output)
    assert set(hosts) | set(output) == {
        "horovod_hosts",
        "horovod_hostfile",
        "horovod_total_slots",
        "horovod_hosts_errors",
        "horovod_failed_rank",
        "horovod_rank_dir",
        "horovod_rank_hosts",
        "horovod_check_build",
    }


def test_failed_rank_from_gloo_output():
    assert ho.failed_rank(GLOO_FAILURE) == 2


def test_failed_rank_of_an_elastic_run_is_not_read_from_its_slot_name():
    # An elastic run names the slot (host[local rank]); the rank is in "Process N exit" (seen on the lab:
    # the slot's "10" was read as rank 10).
    text = (
        "Process 0 exit with status code 1.\nTraceback (most recent call last):\n"
        "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing "
        "the job to be terminated. The first process to do so was:\nProcess name: 10.213.9.12[0]\nExit code: 1\n"
    )
    assert ho.failed_rank(text) == 0


def test_failed_rank_from_exit_line_only():
    assert ho.failed_rank("[0]<stdout>:x\nProcess 1 exit with status code 3.\n") == 1


def test_failed_rank_from_mpirun_output():
    text = (
        "Primary job  terminated normally, but 1 process returned\n...\n  Process name: [[52120,1],2]\n  Exit code: 1\n"
    )
    assert ho.failed_rank(text) == 2


def test_failed_rank_none_when_nothing_failed():
    assert ho.failed_rank("[0]<stdout>:all good\n") is None
    assert ho.failed_rank(None) is None
    assert ho.failed_rank("") is None


@pytest.mark.parametrize(
    ("rank", "np", "expected"),
    [
        (0, 1, "rank.0"),
        (2, 3, "rank.2"),
        (9, 10, "rank.9"),
        (2, 11, "rank.02"),
        (10, 11, "rank.10"),
        (5, 101, "rank.005"),
    ],
)
def test_rank_dir_matches_horovod_padding(rank, np, expected):
    assert ho.rank_dir(rank, np) == expected
    assert ho.rank_dir(str(rank), str(np)) == expected


@pytest.mark.parametrize(("rank", "np"), [(3, 3), (-1, 3), (0, 0), ("x", 2), (None, 2)])
def test_rank_dir_rejects_out_of_range(rank, np):
    with pytest.raises(AnsibleFilterError):
        ho.rank_dir(rank, np)


def test_rank_dir_reads_numbers_as_every_filter_does():
    # numbers.whole: an int or a string of digits, with a sign and spaces as Ansible's int() takes them.
    assert ho.rank_dir(" +2 ", "+11") == "rank.02"


@pytest.mark.parametrize(("rank", "np"), [(1.5, 3), (1, 3.0), (True, 3), (1, "3.0")])
def test_rank_dir_refuses_what_is_not_a_whole_number(rank, np):
    # int() took 1.5 as 1 and True as 1 before the filter used numbers.whole.
    with pytest.raises(AnsibleFilterError, match="rank and np must be whole numbers"):
        ho.rank_dir(rank, np)


def test_check_build_parses_sections():
    assert ho.check_build(CHECK_BUILD) == {
        "version": "0.28.1",
        "frameworks": ["pytorch"],
        "controllers": ["gloo"],
        "tensor_operations": ["gloo"],
    }


def test_check_build_gpu_image():
    text = CHECK_BUILD.replace("[ ] NCCL", "[X] NCCL").replace("[ ] MPI", "[X] MPI")
    build = ho.check_build(text)
    assert build["controllers"] == ["mpi", "gloo"]
    assert build["tensor_operations"] == ["nccl", "mpi", "gloo"]


def test_check_build_rejects_other_text():
    with pytest.raises(AnsibleFilterError, match="not the output of 'horovodrun --check-build'"):
        ho.check_build("bash: horovodrun: command not found")
