#!/usr/bin/env python3
"""Writes packaging/symbol-order.txt: the functions `tailship run` executes
(start, the file source, stages, the push with and without gzip, /metrics and
/status, rotation, shutdown), which build.rs asks the linker to put first in
the release binary's code.

Why: the kernel maps a program's code 64 KiB at a time around each page it
runs. The agent runs about 3 MiB of its 17 MiB of code, but spread through the
binary that touched 11 MiB of it: most of the daemon's resident memory was
code it never ran, beside code it did. Placed together, the code it runs is a
few MiB of pages.

The functions that run once the agent runs come first; those that only
start it (the command line, the config, the plan) or stop it come after:
`util::pages` drops the pages used only to start once the agent runs, and
the ones that keep running are then few and together. A third run follows
300 files with 50 open at a time, so parking and the scan of many files are
placed with the rest.

Run (valgrind's callgrind lists every function a run executes, however rarely):
    cargo rustc --release --bin tailship -- -C strip=none
    python3 benches/hot_symbols.py target/release/tailship
    cargo build --release   # the shipped, stripped build, now ordered
`cargo rustc` keeps the symbols without changing the release profile: a
profile setting (CARGO_PROFILE_RELEASE_STRIP=none) changes the crate's
metadata hash, which is in every symbol name of this crate, and the list
would name none of the shipped build's own functions. Names that no longer
exist are passed over by the linker, so an old list only places less;
regenerate it after a toolchain or dependency update or a large change."""
import os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

binary = os.path.abspath(sys.argv[1])
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out_path = os.path.join(root, "packaging", "symbol-order.txt")
if not shutil.which("valgrind"):
    sys.exit("valgrind is needed (apt-get install valgrind)")


def port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_for(what, check, secs=120):
    deadline = time.time() + secs
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.2)
    sys.exit(f"timed out waiting for {what}")


def get(url):
    try:
        return urllib.request.urlopen(url, timeout=5).read()
    except OSError:
        return None


JSON_STAGES = """stages = [
  { json = { level = "level", msg = "msg" } },
  { labels = ["level"] },
  { regex = 'seq=(?P<seq>\\d+)' },
  { output = "msg" },
]
"""


def dump(agent):
    """Ends a part of the profile: callgrind writes what ran so far to the
    next numbered file, and counts from zero."""
    r = subprocess.run(["callgrind_control", "--dump", str(agent.pid)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"callgrind_control --dump {agent.pid} failed: {r.stdout}{r.stderr}")


def scenario(d, store, name, compression, stages, server, files=10, extra=""):
    """One `tailship run` under callgrind: start, `files` files written and
    one rotated, /metrics and /status read when `server`, then SIGTERM.
    Returns the profiles of the running part and of the start and stop."""
    logs = os.path.join(d, name)
    os.makedirs(logs)
    for i in range(files):
        open(os.path.join(logs, f"app{i}.log"), "w").close()
    listen = f"127.0.0.1:{port()}" if server else ""
    cfg = os.path.join(d, f"{name}.toml")
    open(cfg, "w").write(
        f'[server]\nlisten = "{listen}"\n[client]\nurl = "{store}"\ncompression = "{compression}"\n'
        f'[positions]\npath = "{d}/{name}.positions.json"\n[[sources]]\ntype = "file"\n'
        f'include = ["{logs}/*.log"]\nlabels = {{ job = "{name}" }}\n{extra}{stages}'
    )
    out = os.path.join(d, f"{name}.callgrind")
    agent = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", binary, "run", "--config", cfg],
        stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(d, f"{name}.log"), "w"),
    )
    # Running once the first line is in the store (callgrind is slow to start).
    def started():
        if agent.poll() is not None:
            sys.exit(f"the agent exited: see {d}/{name}.log")
        with open(os.path.join(logs, "app0.log"), "a") as f:
            f.write("warmup\n")
        return seen(store, name, 1)

    wait_for("the agent to start", started, 300)
    dump(agent)  # part 1: starting
    for i in range(2000):
        with open(os.path.join(logs, f"app{i % files}.log"), "a") as f:
            f.write(f'{{"level":"info","msg":"seq={i} request served"}}\n' if stages else f"seq={i} level=info msg=served\n")
    os.rename(os.path.join(logs, "app1.log"), os.path.join(logs, "app1.log.1"))
    with open(os.path.join(logs, "app1.log"), "w") as f:
        f.write("after rotation\n")
    wait_for("the lines to arrive", lambda: seen(store, name, 2000), 300)
    if server:
        for path in ["/metrics", "/status", "/status?format=json", "/ready"]:
            get(f"http://{listen}{path}")
    dump(agent)  # part 2: running
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=120)
    parts = sorted(p for p in os.listdir(d) if p.startswith(f"{name}.callgrind"))
    if len(parts) != 3:
        sys.exit(f"expected 3 profiles of {name} (start, running, stop), found {parts}")
    running = os.path.join(d, f"{name}.callgrind.2")
    return running, [os.path.join(d, p) for p in parts if p != f"{name}.callgrind.2"]


def seen(store, job, n):
    """True when the store holds at least `n` lines of `job`."""
    q = urllib.parse.urlencode({"query": f'{{job="{job}"}}', "limit": 100000, "since": "1h"})
    body = get(f"{store}/logstore/api/v1/query_range?{q}")
    if not body:
        return False
    import json

    data = json.loads(body)
    return sum(len(s.get("values", [])) for s in data.get("data", {}).get("result", [])) >= n


import urllib.parse  # noqa: E402

d = tempfile.mkdtemp(prefix="hot-")
sp = port()
store_url = f"http://127.0.0.1:{sp}"
store = subprocess.Popen([binary, "receive", "--listen", f"127.0.0.1:{sp}", "--max-query-limit", "1000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    wait_for("the store", lambda: get(f"{store_url}/logstore/api/v1/labels") is not None)
    runs = [
        scenario(d, store_url, "plain", "none", "", False),
        scenario(d, store_url, "json", "gzip", JSON_STAGES, True),
        scenario(d, store_url, "many", "none", "", False, files=300, extra="max_open_files = 50\n"),
    ]
finally:
    store.terminate()


def functions(path):
    """The functions a profile counts (each named once per file)."""
    names = set()
    for line in open(path):
        m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
        if m:
            names.add(m.group(1))
    return names


running, once = set(), set()
for run, others in runs:
    running |= functions(run)
    for p in others:
        once |= functions(p)
once -= running
nm = subprocess.run(["nm", "--defined-only", "-S", binary], capture_output=True, text=True, check=True).stdout
text = {}
for line in nm.splitlines():
    p = line.split()
    if len(p) == 4 and p[2] in "tTwW":
        text[p[3]] = int(p[1], 16)
first = sorted(n for n in running if n in text)
then = sorted(n for n in once if n in text)
if len(first) < 500:
    sys.exit(f"only {len(first)} functions found: was the binary built with symbols (-C strip=none)?")
with open(out_path, "w") as f:
    f.write("".join(n + "\n" for n in first + then))
size = lambda names: sum(text[n] for n in names) / 2**20  # noqa: E731
print(
    f"{len(first)} functions running ({size(first):.2f} MiB), then {len(then)} starting or stopping "
    f"({size(then):.2f} MiB), of {size(text):.2f} MiB of code -> {out_path}"
)
shutil.rmtree(d, ignore_errors=True)
