"""smbtorture suites against smb3d, with a knownfail list (interop/torture/knownfail)."""

import dataclasses

import pytest

from conftest import start_smb3d, stop
from torture import judge, read_list, run_suite, sections_of

SUITES = read_list("suites")
KNOWNFAIL = read_list("knownfail")


@pytest.mark.parametrize("line", SUITES)
def test_suite(shared_smb3d, line):
    # A suite may be followed by smbtorture options it needs.
    suite, *options = line.split()
    results, output = run_suite(shared_smb3d, suite, extra=options)
    passed = sum(1 for r in results.values() if r == "success")
    print("%s: %d passed of %d" % (suite, passed, len(results)))
    problems = judge(results, KNOWNFAIL)
    assert not problems, "\n".join(problems) + "\n" + sections_of(output, problems) + \
        "\n--- smbtorture ---\n" + output[-6000:] + "\n--- server log ---\n" + shared_smb3d.log_tail()
    assert shared_smb3d.alive(), "server died during " + suite


@pytest.mark.parametrize("suite", ["smb2.session", "smb2.session-require-signing"])
def test_session_suites_with_signing_required(tmp_path, suite):
    """The session suites against a server that requires signing (`signing = "required"`):
    every answer a client that signs waits for, refusals of a session that just ended included,
    comes signed (smb2.session-require-signing checks the server says so)."""
    server = start_smb3d(tmp_path, signing="required")
    try:
        results, output = run_suite(server, suite)
        passed = sum(1 for r in results.values() if r == "success")
        print("%s with signing required: %d passed of %d" % (suite, passed, len(results)))
        problems = judge(results, KNOWNFAIL)
        assert not problems, "\n".join(problems) + "\n" + sections_of(output, problems) + \
            "\n--- smbtorture ---\n" + output[-6000:] + "\n--- server log ---\n" + server.log_tail()
    finally:
        stop(server)


@pytest.mark.parametrize("suite", ["smb2.getinfo", "smb2.dir"])
def test_suites_on_a_share_with_short_names(tmp_path, suite):
    """The suites that query short names against a share with `short_names`, where listings
    carry them too."""
    share = str(tmp_path / "share")
    server = start_smb3d(tmp_path, shares={"share": {"path": share, "short_names": True}})
    try:
        results, output = run_suite(server, suite)
        problems = judge(results, KNOWNFAIL)
        assert not problems, "\n".join(problems) + "\n" + sections_of(output, problems) + \
            "\n--- smbtorture ---\n" + output[-6000:] + "\n--- server log ---\n" + server.log_tail()
    finally:
        stop(server)


def test_local_posix_locks(shared_smb3d):
    """smb2.samba3misc.localposixlock1: a local process's fcntl lock on the shared file refuses
    an SMB lock at once, and a blocking one waits until the process lets go (`posix_locking`,
    on by default); the test opens the file itself, so it is told where the share lies."""
    results, output = run_suite(shared_smb3d, "smb2.samba3misc",
                                extra=["--option=torture:localdir=%s" % shared_smb3d.share_dir])
    problems = judge(results, KNOWNFAIL)
    assert results.get("smb2.samba3misc.localposixlock1") == "success", output[-4000:]
    assert not problems, "\n".join(problems) + "\n" + output[-4000:]


def test_kernel_oplocks(tmp_path):
    """smb2.kernel-oplocks on a share with `kernel_oplocks`, as Samba runs it with `kernel
    oplocks = yes`; it takes Linux leases on the share's files from a local process (so it is
    told where the share lies): kernel_oplocks8's SMB open waits until that process lets go of
    its lease, without holding up the connection's other requests; kernel_oplocks5 and 7 get no
    level II oplock beside a writer, which the kernel cannot back with a read lease."""
    share = tmp_path / "share"
    server = start_smb3d(tmp_path, shares={"share": {"path": str(share), "kernel_oplocks": True}})
    try:
        results, output = run_suite(server, "smb2.kernel-oplocks",
                                    extra=["--option=torture:localdir=%s" % server.share_dir])
        passed = sum(1 for r in results.values() if r == "success")
        print("smb2.kernel-oplocks: %d passed of %d" % (passed, len(results)))
        problems = judge(results, KNOWNFAIL)
        assert not problems, "\n".join(problems) + "\n" + sections_of(output, problems) + output[-4000:]
        assert len(results) == 8 and passed == 8, results
        assert server.alive()
    finally:
        stop(server)


# smbtorture's vfs_fruit suites, each against the share its selftest runs it on (Samba's
# source3/selftest/tests.py), with `apple = true` shares standing for Samba's vfs_fruit shares
# (`fruit:metadata = netatalk`, `fruit:resource = file`, `fruit:encoding = native`) and a
# plain share of the same directory for the second share some tests open (`vfs_wo_fruit`:
# "invalid AFP_AfpInfo" writes a stream through it that the apple share must not show). As
# there (`fruit:veto_appledouble = no`), the `._` files are not vetoed on the fruit share.
FRUIT_SUITES = [
    ("vfs.fruit", "fruit", ["--option=torture:share2=fruit_wo"]),
    ("vfs.fruit_netatalk", "fruit", []),
    ("vfs.fruit_file_id", "fruit", []),
    ("vfs.fruit_timemachine", "timemachine", []),
    # Its two runs there: `._` files converted with the blank resource fork wiped, once keeping
    # the emptied `._` file and once deleting it.
    ("vfs.fruit_conversion", "plain", ["--option=torture:share2=fruit_convert",
                                       "--option=torture:delete_empty_adfiles=false"]),
    ("vfs.fruit_conversion", "plain", ["--option=torture:share2=fruit_convert_delete",
                                       "--option=torture:delete_empty_adfiles=true"]),
]
FRUIT_IDS = ["vfs.fruit", "vfs.fruit_netatalk", "vfs.fruit_file_id", "vfs.fruit_timemachine",
             "vfs.fruit_conversion", "vfs.fruit_conversion-delete"]


@pytest.fixture(scope="module")
def fruit_smb3d(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fruit")
    dirs = {name: tmp / name for name in ("fruit", "timemachine", "plain")}
    for d in dirs.values():
        d.mkdir()
    server = start_smb3d(tmp, shares={
        "fruit": {"path": str(dirs["fruit"]), "apple": True, "apple_veto_appledouble": False},
        "timemachine": {"path": str(dirs["timemachine"]), "apple": True, "time_machine": True,
                        "time_machine_max_size": "32K"},
        "plain": {"path": str(dirs["plain"])},
        "fruit_wo": {"path": str(dirs["fruit"])},
        "fruit_convert": {"path": str(dirs["plain"]), "apple": True, "apple_veto_appledouble": False,
                          "apple_wipe_intentionally_left_blank_rfork": True},
        "fruit_convert_delete": {"path": str(dirs["plain"]), "apple": True,
                                 "apple_veto_appledouble": False,
                                 "apple_wipe_intentionally_left_blank_rfork": True,
                                 "apple_delete_empty_adfiles": True},
    })
    server.dirs = dirs
    yield server
    stop(server)


@pytest.mark.parametrize("suite,share,options", FRUIT_SUITES, ids=FRUIT_IDS)
def test_fruit_suite(fruit_smb3d, suite, share, options):
    server = dataclasses.replace(fruit_smb3d, share=share, share_dir=fruit_smb3d.dirs[share])
    results, output = run_suite(server, suite, extra=[
        "--option=torture:localdir=%s" % server.share_dir, *options])
    passed = sum(1 for r in results.values() if r == "success")
    print("%s: %d passed of %d" % (suite, passed, len(results)))
    problems = judge(results, KNOWNFAIL)
    assert not problems, "\n".join(problems) + "\n" + sections_of(output, problems) + \
        "\n--- smbtorture ---\n" + output[-6000:] + "\n--- server log ---\n" + server.log_tail()
    assert server.alive(), "server died during " + suite
