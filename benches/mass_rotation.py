#!/usr/bin/env python3
"""Mass rotation (issue #39's measurement): N files, each renamed to
fNNNN.log.<tick> and created again with 2 new lines every second, for SECS
seconds; every rotated file stays beside its path. Counts lines lost and shown
twice at a `tailship receive` store, and tailship_files_lost_total.

Prints lines lost and twice, how long after the writer stopped the last
line arrived, the agent's CPU seconds (user + system, at that moment) and its
peak resident set (VmHWM).

Run: python3 benches/mass_rotation.py target/release/tailship 2000 30
(EXTRA='max_open_files = 4096' adds a line to the file source's table)."""
import json, os, subprocess, sys, tempfile, time, urllib.request, urllib.parse, socket

binary, n, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
d = tempfile.mkdtemp(prefix="rot-")
logs = os.path.join(d, "logs"); os.makedirs(logs)
sp = port()
store = subprocess.Popen([binary, "receive", "--listen", f"127.0.0.1:{sp}", "--max-query-limit", "10000000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
cfg = os.path.join(d, "a.toml")
open(cfg, "w").write(f'''[server]
listen = "127.0.0.1:{port()}"
[client]
url = "http://127.0.0.1:{sp}"
[positions]
path = "{d}/positions.json"
[[sources]]
type = "file"
include = ["{logs}/*.log"]
labels = {{ job = "rot" }}
host_label = false
{os.environ.get("EXTRA", "")}
''')
time.sleep(1)
agent = subprocess.Popen([binary, "run", "--config", cfg], stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "agent.err"), "w"))
total = 0
for f in range(n):
    with open(f"{logs}/f{f:05d}.log", "a") as h:
        h.write(f"f{f} t0 a\nf{f} t0 b\n"); total += 2
start = time.time()
for tick in range(1, secs + 1):
    t0 = time.time()
    for f in range(n):
        p = f"{logs}/f{f:05d}.log"
        os.rename(p, f"{p}.{tick}")
        with open(p, "a") as h:
            h.write(f"f{f} t{tick} a\nf{f} t{tick} b\n"); total += 2
    left = 1 - (time.time() - t0)
    if left > 0: time.sleep(left)
def query():
    q = urllib.parse.urlencode({"query": '{job="rot"}', "limit": "10000000", "start": "0", "end": str(int(time.time()*1e9)+10**12)})
    r = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sp}/logstore/api/v1/query_range?{q}"))
    return [v[1] for s in r["data"]["result"] for v in s["values"]]
# Until every line is there, or none arrived for 60 s (the agent gave up on them).
got, last, last_change, ended = [], -1, time.time(), time.time()
while time.time() - last_change < 60:
    got = query()
    if len(set(got)) >= total: break
    if len(got) != last: last, last_change = len(got), time.time()
    time.sleep(2)
caught_up = time.time() - ended
def usage(pid):
    """The agent's CPU seconds (user + system) and peak resident set (MiB)."""
    stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    hwm = [l for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM:")][0].split()[1]
    return cpu, int(hwm) / 1024
cpu, peak = usage(agent.pid)
time.sleep(3); got = query()
lost = total - len(set(got)); twice = len(got) - len(set(got))
m = ""
try:
    import re
    text = urllib.request.urlopen(open(cfg).read().split('listen = "')[1].split('"')[0].join(["http://", "/metrics"])).read().decode()
    m = [l for l in text.splitlines() if l.startswith("tailship_files_lost_total")]
    if os.environ.get("DETAIL"):
        print("\n".join(l for l in text.splitlines() if l.startswith(("tailship_lines", "tailship_files", "tailship_file_events"))))
except Exception as e:
    m = str(e)
print(f"{binary}: files={n} secs={secs} written={total} lost={lost} twice={twice} files_lost={m} caught_up_after={caught_up:.0f}s agent_cpu={cpu:.1f}s peak_rss={peak:.1f}MiB")
if lost and os.environ.get("DETAIL"):
    have = set(got)
    missing = [f"f{f} t{t} {x}" for f in range(n) for t in range(secs + 1) for x in "ab" if f"f{f} t{t} {x}" not in have]
    whole = sum(1 for f in range(n) for t in range(secs + 1) if f"f{f} t{t} a" not in have and f"f{f} t{t} b" not in have)
    by_tick = {}
    for l in missing:
        t = int(l.split()[1][1:]); by_tick[t] = by_tick.get(t, 0) + 1
    print(f"whole generations lost: {whole}; lost by tick: {sorted(by_tick.items())}; sample: {missing[:10]}")
    print("agent log:", d)
if twice and os.environ.get("DETAIL"):
    from collections import Counter
    dups = sorted(l for l, c in Counter(got).items() if c > 1)
    print(f"lines twice: {len(dups)} distinct; sample: {dups[:20]}")
    print("agent log:", d)
agent.terminate(); store.terminate()
if os.environ.get("DETAIL"): time.sleep(1)
