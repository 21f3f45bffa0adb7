#!/usr/bin/env python3
"""I/O faults (docs/reliability.md): every output tpsim writes fails
cleanly on a full disk and in a read-only directory, keeps any existing
output, and a trace that goes missing under `tpsim check` is a clear error.

  io_faults.py TPSIM SOURCE_ROOT

A full disk is /dev/full, and a tmpfs of one page that the existing output
already fills (mounted when run as root; else the same write errors come
from a file-size limit, RLIMIT_FSIZE, which a non-root user can set). A
read-only directory is a read-only tmpfs as root (root ignores permission
bits), else a directory of mode 0555. Every fault must give exit 2, one
line on stderr naming the file, no partial file and no temporary file; an
existing output keeps its bytes.

A file-size limit is also tried as root and with SIGXFSZ at its default
action (which kills a process that writes past the limit): tpsim ignores
SIGXFSZ itself. And SIGTERM, SIGINT and SIGHUP sent to a run that is
writing its trace must kill it (as the signal would) and leave no
temporary file.
"""
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FAILURES = []
BIG = "tools/bench/mlp4_h1024_b64_tp8.json"  # a trace of about 40 kB
SMALL = "fixtures/seed_2x4_rowwise_after_reduce/config.json"


def tpsim(args, root, limit=None, stdout=subprocess.DEVNULL):
    def preexec():
        # SIGXFSZ keeps its default action (python ignores it in the
        # children it starts only if it ignores it itself): tpsim must
        # ignore it, or the kernel kills it mid-file.
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run([TPSIM] + args, cwd=root, stdout=stdout,
                       stderr=subprocess.PIPE, preexec_fn=preexec)
    return p.returncode, p.stderr.decode(errors="replace")


def expect_error(what, rc, err, words, name=None):
    lines = err.strip().splitlines()
    if (rc != 2 or len(lines) != 1 or not any(w in err for w in words) or
            (name and name not in err)):
        FAILURES.append("%s: exit %d, stderr %r (want exit 2, one line "
                        "with one of %s%s)" % (
                            what, rc, err, words,
                            " naming " + name if name else ""))


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


# A run that writes a trace for a few seconds: an MLP of four 544 x 544
# linears over 8 ranks, training with full values (about 150 MB a step).
LONG_RUN = """{"tpsim": 1, "mesh": {"shape": [8], "dim_names": ["tp"]},
 "model": [
  {"name": "fc1", "type": "linear", "in_features": 544, "out_features": 544},
  {"name": "act1", "type": "relu"},
  {"name": "fc2", "type": "linear", "in_features": 544, "out_features": 544},
  {"name": "fc3", "type": "linear", "in_features": 544, "out_features": 544},
  {"name": "act2", "type": "relu"},
  {"name": "fc4", "type": "linear", "in_features": 544, "out_features": 544}],
 "plan": {"fc1": "colwise", "fc2": "rowwise", "fc3": "colwise",
          "fc4": "rowwise"},
 "input": {"shape": [64, 544], "seed": 1},
 "init": {"method": "uniform", "seed": 2},
 "mode": "training", "steps": 20, "trace": {"values": "full"}}
"""


def signals_leave_no_temporary(root, tmp):
    """SIGTERM, SIGINT and SIGHUP while `tpsim run -o` writes its trace:
    the process dies of the signal and its temporary file is gone."""
    config = os.path.join(tmp, "long_run.json")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        out_dir = os.path.join(tmp, "signal_%d" % sig)
        os.mkdir(out_dir)
        target = os.path.join(out_dir, "t.json")

        def preexec():
            # The defaults, whatever the test runner set (a shell's
            # background jobs ignore SIGINT); and a bound on the disk used
            # should the signal never come.
            for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                      signal.SIGXFSZ):
                signal.signal(s, signal.SIG_DFL)
            resource.setrlimit(resource.RLIMIT_FSIZE,
                               (200 << 20, 200 << 20))
        p = subprocess.Popen([TPSIM, "run", config, "-o", target,
                              "--threads", "1", "--max-trace", "4G"],
                             cwd=root,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, preexec_fn=preexec)
        deadline = time.monotonic() + 60
        temporary = None
        while time.monotonic() < deadline and p.poll() is None:
            names = [n for n in os.listdir(out_dir) if ".tmp." in n]
            if names and os.path.getsize(os.path.join(out_dir,
                                                      names[0])) > 0:
                temporary = names[0]
                break
            time.sleep(0.01)
        if temporary is None:
            p.kill()
            p.wait()
            FAILURES.append("signal %d: no temporary trace appeared "
                            "(exit %s)" % (sig, p.returncode))
            continue
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        if p.returncode != -sig:
            FAILURES.append("signal %d while writing %s: exit %s, want "
                            "death by the signal; stderr %r" % (
                                sig, temporary, p.returncode, err))
        left = os.listdir(out_dir)
        if left:
            FAILURES.append("signal %d while writing: left %s" % (sig, left))


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

        # A file-size limit, whoever runs the test: tpsim ignores SIGXFSZ,
        # so the write fails with EFBIG (File too large); one line naming
        # the output, no temporary file, nothing published.
        limited = os.path.join(tmp, "limited")
        os.mkdir(limited)
        target = os.path.join(limited, "out")
        for verb, args in outputs(root, trace, target):
            rc, err = tpsim(args, root, limit=2048)
            expect_error("%s under a 2 KiB file-size limit" % verb, rc, err,
                         ["File too large"], name=target)
            stray = os.listdir(limited)
            if stray:
                FAILURES.append("%s under a file-size limit: left %s" %
                                (verb, stray))
                for f in stray:
                    os.remove(os.path.join(limited, f))

        # A long run past the limit stops at the first write that fails
        # (about 0.5 s), instead of simulating and formatting its 20 steps
        # for nothing (about 30 s).
        config = os.path.join(tmp, "long_run.json")
        with open(config, "w") as f:
            f.write(LONG_RUN)
        start = time.monotonic()
        # Its trace (about 1.8 GiB) is over the default trace budget.
        rc, err = tpsim(["run", config, "-o", target, "--threads", "1",
                         "--max-trace", "4G"], root, limit=64 << 10)
        took = time.monotonic() - start
        expect_error("a long run under a 64 KiB file-size limit", rc, err,
                     ["File too large"], name=target)
        if took > 10:
            FAILURES.append("a long run under a file-size limit took %.1f s "
                            "to stop" % took)
        if os.listdir(limited):
            FAILURES.append("a long run under a file-size limit left %s" %
                            os.listdir(limited))

        signals_leave_no_temporary(root, tmp)

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
