"""A byte-flipping fuzz loop for the HDF5 trace reader, through the command
a user would run.  Not part of `make check` (it takes minutes); run it on
an ASan + UBSan build (./configure --enable-sanitizers):

  python3 tests/fuzz/trace-flip.py --shardplan BUILD/tools/shardplan \
      --out /tmp/flip -n 3000 SEED.h5 [SEED.h5 …]

Each run copies a seed trace, changes 1 to 8 random bytes (a random value
or one flipped bit), and runs `shardplan trace show` or `shardplan trace
export --format csv` on it with a time limit.  Exit 0 (the flip hit
nothing that matters) and exit 2 (refused with a message) pass; anything
else (a signal, a sanitizer report, a timeout, another exit status) is
kept in OUT as NAME.h5 with NAME.txt (the command and its stderr), and the
top stack frames are summarised at the end so findings inside libhdf5 are
told apart from the project's own."""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys

p = argparse.ArgumentParser()
p.add_argument("--shardplan", required=True)
p.add_argument("--out", required=True)
p.add_argument("-n", type=int, default=2000, help="runs (default 2000)")
p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
p.add_argument("--jobs", type=int, default=2)
p.add_argument("--timeout", type=float, default=10.0, help="seconds per run (default 10)")
p.add_argument("seeds", nargs="+")
args = p.parse_args()
os.makedirs(args.out, exist_ok=True)
seeds = [open(s, "rb").read() for s in args.seeds]
env = dict(os.environ,
           ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=98")
COMMANDS = [["trace", "show"], ["trace", "export", "--format", "csv"]]


def one(i):
    rng = random.Random(args.seed * 1000003 + i)
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data))
        if rng.random() < 0.5:
            data[at] ^= 1 << rng.randrange(8)
        else:
            data[at] = rng.randrange(256)
    path = os.path.join(args.out, "run-%d.h5" % i)
    with open(path, "wb") as f:
        f.write(data)
    cmd = [args.shardplan] + COMMANDS[i % len(COMMANDS)] + [path]
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=args.timeout)
        rc, err = r.returncode, r.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, err = "timeout", (e.stderr or b"").decode("utf-8", "replace")
    if rc in (0, 2):
        os.unlink(path)
        return None
    with open(os.path.join(args.out, "run-%d.txt" % i), "w") as f:
        f.write("%s\nexit: %s\n%s" % (" ".join(cmd), rc, err))
    return i, rc, err


def where(err):
    """The first stack frame of a sanitizer report, or the kind of failure."""
    frames = re.findall(r"#\d+ 0x[0-9a-f]+ in (\S+) (\S+)", err)
    for fn, loc in frames:
        if "asan" in loc or "ubsan" in loc or fn.startswith("__interceptor"):
            continue
        lib = "libhdf5" if "hdf5" in loc else "shardplan" if "/lib/" in loc or "/tools/" in loc else loc
        return "%s (%s)" % (fn, lib)
    m = re.search(r"(runtime error: .*)", err)
    return m.group(1)[:100] if m else "no stack"


found = []
with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
    for res in ex.map(one, range(args.n)):
        if res:
            found.append(res)
kinds = {}
for i, rc, err in found:
    key = (str(rc), where(err))
    kinds.setdefault(key, []).append(i)
print("%d runs, %d findings" % (args.n, len(found)))
for (rc, w), runs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
    print("  %4d  exit %-7s %s   e.g. run-%d" % (len(runs), rc, w, runs[0]))
sys.exit(1 if found else 0)
