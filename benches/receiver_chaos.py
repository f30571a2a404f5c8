#!/usr/bin/env python3
"""Receivers under kill -9 (issue #38's chaos figures): a relay agent with a
`loki_push` and a TCP `syslog` source, shipping to a `tailship receive`
store, is killed with SIGKILL KILLS times while two senders go on: an HTTP
pusher (100 numbered lines a request; a 204 means acknowledged) and a syslog
sender (octet-counted RFC 5424 over TCP, reconnecting after each kill).
Counts, at the store: acknowledged pushed lines lost and any line shown twice;
syslog lines that reached the store of those sent; the relay's peak RSS
(VmHWM before each kill).

Run: python3 benches/receiver_chaos.py target/release/tailship 10"""
import json, os, random, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request, urllib.parse

binary, kills = sys.argv[1], int(sys.argv[2])
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
d = tempfile.mkdtemp(prefix="rchaos-")
sp, hp, yp = port(), port(), port()
store = subprocess.Popen([binary, "receive", "--listen", f"127.0.0.1:{sp}", "--max-query-limit", "10000000", "--max-entries", "100000000", "--max-bytes", "16GiB", "--max-query-bytes", "4GiB"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
cfg = os.path.join(d, "relay.toml")
open(cfg, "w").write(f'''[server]
listen = "127.0.0.1:{port()}"
[client]
url = "http://127.0.0.1:{sp}"
[positions]
path = "{d}/positions.json"
[spool]
path = "{d}/spool"
[[sources]]
type = "loki_push"
name = "push"
listen = "127.0.0.1:{hp}"
labels = {{ job = "push" }}
[[sources]]
type = "syslog"
name = "sys"
listen = "127.0.0.1:{yp}"
labels = {{ job = "sys" }}
''')
def start():
    return subprocess.Popen([binary, "run", "--config", cfg], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(d, "relay.err"), "a"))
def up(p):
    try:
        socket.create_connection(("127.0.0.1", p), timeout=0.2).close(); return True
    except OSError:
        return False
relay = start()
while not (up(hp) and up(yp)): time.sleep(0.05)
stop = threading.Event()
acked, pushed_sent, sys_sent = set(), [0], [0]

def pusher():
    i = 0
    while not stop.is_set():
        now = time.time_ns()
        lines = [f"push {i + k:09d} " + "x" * 40 for k in range(100)]
        body = json.dumps({"streams": [{"stream": {"app": f"a{i // 100 % 8}"},
                                        "values": [[str(now + k), l] for k, l in enumerate(lines)]}]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{hp}/loki/api/v1/push", body, {"Content-Type": "application/json"})
        pushed_sent[0] += 100
        try:
            if urllib.request.urlopen(req, timeout=5).status == 204: acked.update(lines)
        except Exception:
            time.sleep(0.05)
        i += 100

def syslogger():
    i, s = 0, None
    while not stop.is_set():
        try:
            if s is None: s = socket.create_connection(("127.0.0.1", yp), timeout=2)
            msg = f"<14>1 2026-11-27T00:00:00Z host app - - - sys {i:09d}".encode()
            s.sendall(str(len(msg)).encode() + b" " + msg); i += 1; sys_sent[0] = i
            if i % 200 == 0: time.sleep(0.01)
        except OSError:
            s = None; time.sleep(0.05)

threads = [threading.Thread(target=pusher), threading.Thread(target=syslogger)]
for t in threads: t.start()
peak = 0
def hwm(pid):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmHWM"): return int(l.split()[1])
    return 0
for k in range(kills):
    time.sleep(random.uniform(1.0, 3.0))
    peak = max(peak, hwm(relay.pid))
    relay.send_signal(signal.SIGKILL); relay.wait()
    relay = start()
    while not (up(hp) and up(yp)): time.sleep(0.05)
time.sleep(2)
stop.set()
for t in threads: t.join()
def query(job):
    q = urllib.parse.urlencode({"query": '{job="%s"}' % job, "limit": "10000000", "start": "0",
                                "end": str(time.time_ns() + 10**12)})
    r = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sp}/logstore/api/v1/query_range?{q}"))
    return [v[1] for s in r["data"]["result"] for v in s["values"]]
# Until every acknowledged line is there, or none arrived for 60 s.
last, last_change = -1, time.time()
while time.time() - last_change < 60:
    got = query("push")
    if acked <= set(got): break
    if len(got) != last: last, last_change = len(got), time.time()
    time.sleep(2)
time.sleep(3)
got, sysgot = query("push"), query("sys")
peak = max(peak, hwm(relay.pid))
lost = len(acked - set(got)); twice = len(got) - len(set(got))
systwice = len(sysgot) - len(set(sysgot))
print(f"{binary}: kills={kills} push: sent={pushed_sent[0]} acknowledged={len(acked)} stored={len(set(got))} "
      f"acknowledged_lost={lost} twice={twice}; syslog: sent={sys_sent[0]} stored={len(set(sysgot))} twice={systwice}; "
      f"relay peak RSS {peak // 1024} MiB")
relay.terminate(); store.terminate()
