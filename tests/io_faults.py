#!/usr/bin/env python3
"""I/O faults (docs/reliability.md): every output tpsim writes fails
cleanly on a full disk and in a read-only directory, keeps any existing
output, and a trace that goes missing under `tpsim check` is a clear error.

  io_faults.py TPSIM SOURCE_ROOT

A full disk is /dev/full, and a tmpfs of one page that the existing output
already fills (mounted when run as root; else the same write errors come
from a file-size limit, RLIMIT_FSIZE, which a non-root user can set). A read-only directory is a read-only tmpfs as
root (root ignores permission bits), else a directory of mode 0555.
Every fault must give exit 2, one line on stderr naming the file, no
partial file and no temporary file; an existing output keeps its bytes.
"""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

FAILURES = []
BIG = "tools/bench/mlp4_h1024_b64_tp8.json"  # a trace of about 40 kB
SMALL = "fixtures/seed_2x4_rowwise_after_reduce/config.json"


def tpsim(args, root, limit=None, stdout=subprocess.DEVNULL):
    def preexec():
        if limit:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run([TPSIM] + args, cwd=root, stdout=stdout,
                       stderr=subprocess.PIPE, preexec_fn=preexec)
    return p.returncode, p.stderr.decode(errors="replace")


def expect_error(what, rc, err, words):
    lines = err.strip().splitlines()
    if rc != 2 or len(lines) != 1 or not any(w in err for w in words):
        FAILURES.append("%s: exit %d, stderr %r (want exit 2, one line "
                        "with one of %s)" % (what, rc, err, words))


def expect_kept(what, directory, name, old):
    path = os.path.join(directory, name)
    with open(path, "rb") as f:
        if f.read() != old:
            FAILURES.append("%s: %s changed" % (what, name))
    stray = [f for f in os.listdir(directory) if f != name]
    if stray:
        FAILURES.append("%s: left %s" % (what, stray))


def outputs(root, trace, target):
    """Every verb that writes a file, aimed at target."""
    return [
        ("run", ["run", BIG, "-o", target]),
        ("picture", ["picture", trace, "--tensor", "fc.weight", "-o",
                     target]),
        ("timeline", ["timeline", trace, "-o", target]),
        ("view", ["view", trace, "-o", target]),
    ]


def mount(directory, options):
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs",
                           directory], stderr=subprocess.DEVNULL).returncode == 0


def main():
    global TPSIM
    TPSIM, root = sys.argv[1], sys.argv[2]
    # TPSIM_IO_FAULTS_UNPRIVILEGED=1 takes the non-root path as root too.
    as_root = (os.geteuid() == 0 and
               not os.environ.get("TPSIM_IO_FAULTS_UNPRIVILEGED"))
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "small.json")
        rc, err = tpsim(["run", SMALL, "-o", trace], root)
        assert rc == 0, err

        # /dev/full: the output path, and stdout.
        for verb, args in outputs(root, trace, "/dev/full"):
            rc, err = tpsim(args, root)
            expect_error("%s -o /dev/full" % verb, rc, err,
                         ["No space left on device"])
        with open("/dev/full", "w") as full:
            rc, err = tpsim(["run", SMALL], root, stdout=full)
            expect_error("run > /dev/full", rc, err,
                         ["No space left on device"])

        # A small file system holding an existing output.
        small = os.path.join(tmp, "small_fs")
        os.mkdir(small)
        mounted = as_root and mount(small, "size=4k")
        old = b"the previous output\n"
        for verb, args in outputs(root, trace,
                                  os.path.join(small, "out")):
            with open(os.path.join(small, "out"), "wb") as f:
                f.write(old)
            rc, err = tpsim(args, root,
                            limit=None if mounted else 4096)
            expect_error("%s on a full %s" % (verb, "tmpfs" if mounted
                                              else "file-size limit"),
                         rc, err, ["No space left on device",
                                   "File too large"])
            expect_kept("%s on a full disk" % verb, small, "out", old)
        if mounted:
            subprocess.run(["umount", small])

        # A read-only directory holding an existing output.
        ro = os.path.join(tmp, "read_only")
        os.mkdir(ro)
        with open(os.path.join(ro, "out"), "wb") as f:
            f.write(old)
        if as_root:
            # Keep the file: a read-only remount of a tmpfs holding it.
            ok = mount(ro, "size=64k")
            if ok:
                with open(os.path.join(ro, "out"), "wb") as f:
                    f.write(old)
                ok = subprocess.run(["mount", "-o", "remount,ro", ro]
                                    ).returncode == 0
            if not ok:
                FAILURES.append("as root, but no read-only tmpfs")
        else:
            os.chmod(ro, 0o555)
        for verb, args in outputs(root, trace, os.path.join(ro, "out")):
            rc, err = tpsim(args, root)
            expect_error("%s in a read-only directory" % verb, rc, err,
                         ["Read-only file system", "Permission denied"])
            expect_kept("%s in a read-only directory" % verb, ro, "out",
                        old)
        if as_root:
            subprocess.run(["umount", ro])
        else:
            os.chmod(ro, 0o755)

        # tpsim check: the trace removed, then cut short by a writer.
        fixture = os.path.join(root, os.path.dirname(SMALL), "fixture.json")
        gone = os.path.join(tmp, "gone.json")
        shutil.copy(trace, gone)
        os.remove(gone)
        rc, err = tpsim(["check", gone, fixture], root)
        expect_error("check of a removed trace", rc, err,
                     ["No such file or directory"])
        with open(trace, "rb") as f:
            data = f.read()
        cut = os.path.join(tmp, "cut.json")
        with open(cut, "wb") as f:
            f.write(data[:len(data) // 2])
        rc, err = tpsim(["check", cut, fixture], root)
        expect_error("check of a trace cut short", rc, err, ["cut.json"])

    for f in FAILURES:
        print(f)
    print("I/O faults: %d failures (%s)" % (
        len(FAILURES), "tmpfs mounts as root" if as_root
        else "file-size limit and mode 0555, not root"))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
