#!/usr/bin/env python3
"""Soak under compound faults (issue #54): one `tailship run` shipping files,
a TCP syslog receiver and a `loki_push` receiver to a real Loki 3.7.6 (from
../shared/peers) through a recording proxy, while everything goes wrong at
once, in an order drawn from SEED:

- 20 files written at RATE lines/s in all; every 30 s one is rotated by
  rename and another by copytruncate (numbered generations, as logrotate);
- a syslog sender (RFC 5424, octet counting over TCP) at 100 messages/s,
  reconnecting after each kill;
- a pusher of 50 lines to the `loki_push` receiver every 0.5 s; a 204 means
  acknowledged;
- the proxy answers 429 (Retry-After: 1), 503, or resets connections (half of
  them after Loki has answered) in 20 s windows, and 502 while Loki is down;
- the agent killed with SIGKILL KILLS times and started again 1 s later;
- Loki stopped with SIGTERM and started again on the same data LOKI_RESTARTS
  times.

At the end (faults over, Loki up) it waits for the agent to deliver, stops
it, and reads Loki: every line of every source by `query_range`, and the
stored copies by `count_over_time` (a log query shows an exact copy once;
Loki keeps it and counts it). Each line lost is attributed from the proxy's
record: to the service (Loki answered 2xx to a push that carried it) or to
the agent (never pushed, or never acknowledged).

Passes (exit 0) when no file line and no acknowledged pushed line is lost or
stored twice, no syslog message is stored twice and every syslog message lost
was sent in the 2 s before a kill (TCP has no acknowledgement: what the
kernel held for the killed agent is gone).

Run: python3 benches/soak.py --binary target/release/tailship --minutes 30 --seed 1
Short form (CI): --minutes 5 (the same number of faults, closer together)."""
import argparse, array, json, os, random, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.parse, urllib.request

from soak_proxy import Faults, Flags, line_id, make_proxy

HERE = os.path.dirname(os.path.abspath(__file__))
FILES, SYSLOG, PUSH = "soak_files", "soak_syslog", "soak_push"
SRC_SYSLOG, SRC_PUSH = 20, 21  # sources 0..19 are the files


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Loki:
    def __init__(self, d):
        get = os.path.join(HERE, "../../shared/peers/get")
        out = subprocess.run([get, "loki"], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("no Loki in ../shared/peers")
        self.bin = out.stdout.strip()
        self.dir = os.path.join(d, "loki")
        os.makedirs(self.dir)
        self.port, grpc = free_port(), free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.cfg = os.path.join(self.dir, "loki.yaml")
        dd = self.dir
        open(self.cfg, "w").write(f"""auth_enabled: false
server: {{ http_listen_address: 127.0.0.1, http_listen_port: {self.port}, grpc_listen_address: 127.0.0.1, grpc_listen_port: {grpc}, log_level: info }}
common:
  instance_addr: 127.0.0.1
  path_prefix: {dd}
  replication_factor: 1
  ring: {{ instance_addr: 127.0.0.1, kvstore: {{ store: inmemory }} }}
  storage: {{ filesystem: {{ chunks_directory: {dd}/chunks, rules_directory: {dd}/rules }} }}
schema_config:
  configs: [{{ from: 2024-01-01, store: tsdb, object_store: filesystem, schema: v13, index: {{ prefix: index_, period: 24h }} }}]
limits_config: {{ allow_structured_metadata: true, volume_enabled: true, max_entries_limit_per_query: 20000 }}
analytics: {{ reporting_enabled: false }}
""")
        self.proc = None
        self.killed = 0  # SIGTERM not obeyed within 90 s

    def start(self):
        self.proc = subprocess.Popen([self.bin, f"-config.file={self.cfg}"], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.dir, "loki.log"), "a"))
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(self.base + "/ready", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.25)
        sys.exit("Loki never became ready")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(90)
        except subprocess.TimeoutExpired:
            self.killed += 1
            log("Loki did not stop within 90 s of SIGTERM: SIGKILL")
            self.proc.kill()
            self.proc.wait()

    def get(self, path, params, timeout=120):
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}"
        return json.load(urllib.request.urlopen(url, timeout=timeout))

    def entries(self, job, start, end):
        """Every (timestamp, line) of `job`, paged forward."""
        out, seen_at_edge, cursor = [], set(), start
        while True:
            r = self.get("/loki/api/v1/query_range", {"query": '{job="%s"}' % job, "start": str(cursor),
                                                       "end": str(end), "limit": "20000", "direction": "forward"})
            page = sorted((int(v[0]), v[1]) for s in r["data"]["result"] for v in s["values"])
            fresh = [e for e in page if not (e[0] == cursor and e in seen_at_edge)]
            out.extend(fresh)
            if len(page) < 20000:
                return out
            if not fresh:
                sys.exit(f"query of {job} makes no progress at {cursor}")
            cursor = page[-1][0]
            seen_at_edge = {e for e in page if e[0] == cursor}

    def stored(self, job, end, span_s):
        """How many entries Loki holds for `job`, exact copies included."""
        r = self.get("/loki/api/v1/query", {"query": 'sum(count_over_time({job="%s"}[%ds]))' % (job, span_s),
                                            "time": str(end)})
        res = r["data"]["result"]
        return int(float(res[0]["value"][1])) if res else 0


class Agent:
    def __init__(self, binary, d, proxy_port, syslog_port, push_port):
        self.binary, self.d = binary, d
        self.metrics_port = free_port()
        self.cfg = os.path.join(d, "agent.toml")
        open(self.cfg, "w").write(f"""shutdown_timeout = "30s"
[server]
listen = "127.0.0.1:{self.metrics_port}"
[client]
url = "http://127.0.0.1:{proxy_port}"
api_prefix = "/loki/api/v1"
[positions]
path = "{d}/positions.json"
[spool]
path = "{d}/spool"
[[sources]]
type = "file"
name = "files"
include = ["{d}/logs/*.log"]
labels = {{ job = "{FILES}" }}
[[sources]]
type = "syslog"
name = "syslog"
listen = "127.0.0.1:{syslog_port}"
protocol = "tcp"
labels = {{ job = "{SYSLOG}" }}
[[sources]]
type = "loki_push"
name = "push"
listen = "127.0.0.1:{push_port}"
labels = {{ job = "{PUSH}" }}
""")
        self.ports = (syslog_port, push_port)
        self.proc = None
        self.cpu = 0.0  # CPU-seconds of the agents killed so far
        self.peak_rss, self.rss, self.fds = 0, [], []

    def start(self):
        self.proc = subprocess.Popen([self.binary, "run", "--config", self.cfg], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.d, "agent.log"), "a"))
        deadline = time.time() + 60
        while time.time() < deadline:
            if all(up(p) for p in self.ports):
                return
            if self.proc.poll() is not None:
                sys.exit(f"the agent exited with {self.proc.returncode}; see {self.d}/agent.log")
            time.sleep(0.05)
        sys.exit("the agent's receivers never listened")

    def sample(self):
        try:
            st = open(f"/proc/{self.proc.pid}/status").read()
            fields = dict(l.split(":", 1) for l in st.splitlines() if ":" in l)
            self.peak_rss = max(self.peak_rss, int(fields["VmHWM"].split()[0]))
            self.rss.append(int(fields["VmRSS"].split()[0]))
            self.fds.append(len(os.listdir(f"/proc/{self.proc.pid}/fd")))
        except (OSError, KeyError):
            pass

    def metric(self, name):
        """The sum of a metric's series on the agent's /metrics (None: no answer)."""
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        except OSError:
            return None
        return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                   if l.startswith(name + " ") or l.startswith(name + "{"))

    def cpu_now(self):
        try:
            f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            return 0.0

    def kill(self):
        self.sample()
        self.cpu += self.cpu_now()
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        self.sample()
        cpu = self.cpu_now()
        self.proc.terminate()
        self.proc.wait(60)
        self.cpu += cpu


def up(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


class Writers:
    """20 files at `rate` lines/s; rotations by rename and copytruncate."""

    def __init__(self, d, rate, rng):
        self.dir = os.path.join(d, "logs")
        os.makedirs(self.dir)
        self.rate, self.rng = rate, rng
        self.written = [0] * 20
        self.rotations = {"rename": 0, "copytruncate": 0}
        self.pending = []  # rotations asked for by the schedule
        self.lock = threading.Lock()

    def path(self, i):
        return os.path.join(self.dir, f"app{i:02d}.log")

    def shift(self, i):
        """app.log.N -> app.log.N+1, ..., as logrotate numbers generations."""
        base = self.path(i)
        n = 1
        while os.path.exists(f"{base}.{n}"):
            n += 1
        for k in range(n - 1, 0, -1):
            os.rename(f"{base}.{k}", f"{base}.{k + 1}")
        return f"{base}.1"

    def rotate(self, how, i):
        with self.lock:
            self.pending.append((how, i))

    def run(self, stop):
        pad = "x" * 60
        tick, t = 0.02, time.time()
        per_tick, carry = self.rate * tick, 0.0
        while not stop.is_set():
            with self.lock:
                todo, self.pending = self.pending, []
            for how, i in todo:
                first = self.shift(i)
                if how == "rename":
                    if os.path.exists(self.path(i)):
                        os.rename(self.path(i), first)
                else:
                    if os.path.exists(self.path(i)):
                        shutil.copyfile(self.path(i), first)
                        os.truncate(self.path(i), 0)
                self.rotations[how] += 1
            carry += per_tick
            n, carry = int(carry), carry - int(carry)
            chunks = {}
            for _ in range(n):
                i = self.rng.randrange(20)
                chunks.setdefault(i, []).append(f"soak {i} {self.written[i]} {pad}\n")
                self.written[i] += 1
            for i, lines in chunks.items():
                with open(self.path(i), "a") as f:
                    f.write("".join(lines))
            t += tick
            time.sleep(max(0.0, t - time.time()))


def syslogger(port, stop, sent_at):
    s, seq = None, 0
    t = time.time()
    while not stop.is_set():
        try:
            if s is None:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1e6) % 1000000:06d}Z"
            msg = f"<14>1 {stamp} host soak - - - soak {SRC_SYSLOG} {seq} sys".encode()
            s.sendall(str(len(msg)).encode() + b" " + msg)
            sent_at.append(time.time())
            seq += 1
        except OSError:
            if s is not None:
                s.close()
            s = None
            time.sleep(0.1)
            continue
        t += 0.01
        time.sleep(max(0.0, t - time.time()))


def pusher(port, stop, acked):
    seq = 0
    t = time.time()
    while not stop.is_set():
        now = time.time_ns()
        values = [[str(now + k), f"soak {SRC_PUSH} {seq + k} push"] for k in range(50)]
        body = json.dumps({"streams": [{"stream": {"app": f"a{seq // 50 % 4}"}, "values": values}]}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/loki/api/v1/push", body,
                                     {"Content-Type": "application/json"})
        try:
            if urllib.request.urlopen(req, timeout=10).status == 204:
                acked.extend(range(seq, seq + 50))
        except OSError:
            pass
        seq += 50
        t += 0.5
        time.sleep(max(0.0, t - time.time()))


def schedule(rng, seconds, kills, restarts, windows):
    """(time, event) pairs: faults spread over the run, none in its last 10%."""
    span = seconds * 0.9
    ev = [(rng.uniform(0.05, 1) * span, "kill") for _ in range(kills)]
    ev += [(rng.uniform(0.05, 1) * span, "loki") for _ in range(restarts)]
    ev += [(rng.uniform(0.05, 1) * span, rng.choice(["429", "503", "reset"])) for _ in range(windows)]
    t = 30.0
    while t < seconds:
        ev.append((t, "rotate"))
        t += 30
    return sorted(ev)


def drive(events, t0, seconds, loki, agent, writers, faults, rng):
    """Runs the schedule; returns (killed at, running again at) of each kill."""
    kills, window_end, next_sample = [], None, time.time()
    while events or time.time() - t0 < seconds:
        if window_end and time.time() >= window_end:
            faults.mode, window_end = None, None
        if time.time() >= next_sample:
            agent.sample()
            next_sample += 5
        if not events or events[0][0] > time.time() - t0:
            time.sleep(0.1)
            continue
        _, ev = events.pop(0)
        if ev == "kill":
            log("agent: SIGKILL")
            killed_at = time.time()
            agent.kill()
            time.sleep(1)
            agent.start()
            kills.append((killed_at, time.time()))
        elif ev == "loki":
            log("loki: SIGTERM")
            loki.stop()
            faults.epoch += 1
            loki.start()
            log("loki: ready again")
        elif ev == "rotate":
            files = rng.sample(range(20), 2)
            writers.rotate("rename", files[0])
            writers.rotate("copytruncate", files[1])
        else:
            log(f"proxy: {ev} for 20 s")
            faults.mode, window_end = ev, time.time() + 20
    faults.mode = None
    return kills


def wait_delivered(loki, agent, expected, span):
    """Until Loki holds every line sent; or, the agent's queue empty, nothing
    new for 20 s (syslog lines cut by a kill never come); or nothing new for
    330 s (longer than the agent's longest backoff)."""
    last, since = None, time.time()
    while time.time() - since < 330:
        got = {j: loki.stored(j, time.time_ns(), span) for j in expected}
        if all(got[j] >= expected[j] for j in expected):
            return
        if got != last:
            last, since = got, time.time()
        elif time.time() - since > 20 and agent.metric("tailship_queue_lines") == 0:
            return
        time.sleep(2)


def count(job, want, entries, stored, flags, cut_by_kill):
    """What became of the lines `want` of `job`, and who lost each one lost."""
    seen = {}
    for _, line in entries:
        i = line_id(line)
        if i:
            seen[i] = seen.get(i, 0) + 1
    lost = [w for w in want if w not in seen]
    by_whom, cut = {}, 0
    for src, seq in lost:
        f = flags.get(src, seq)
        if cut_by_kill(seq):
            cut += 1
            continue
        if f & Flags.ACKED:
            why = f"service (acknowledged by Loki run {f >> 4}, then gone)"
        elif f & Flags.SENT:
            why = "agent (pushed, never acknowledged)"
        else:
            why = "agent (never pushed)"
        by_whom[why] = by_whom.get(why, 0) + 1
    srcs = {w[0] for w in want}
    r = {"expected": len(want), "found": len(seen), "lost": len(lost) - cut, "lost_by": by_whom,
         # sent again with another timestamp: a log query shows both
         "twice_new_timestamp": sum(n - 1 for n in seen.values() if n > 1),
         # exact copies: Loki keeps and counts them, a log query shows one
         "twice_exact_copies": stored - len(entries),
         "acknowledged_twice_at_proxy": sum(1 for s in srcs for b in flags.by_src.get(s, b"") if b & Flags.ACKED_AGAIN)}
    if job == SYSLOG:
        r["cut_by_kill"] = cut
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default="target/release/tailship")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--loki-restarts", type=int, default=4)
    ap.add_argument("--windows", type=int, default=10)
    ap.add_argument("--dir", help="work directory (kept); default a temporary one, removed when it passes")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    d = args.dir or tempfile.mkdtemp(prefix="soak-")
    os.makedirs(d, exist_ok=True)
    binary = os.path.abspath(args.binary)
    seconds = args.minutes * 60
    log(f"soak: {binary}, {args.minutes} min, seed {args.seed}, in {d}")

    pushes, pushes_lock = {}, threading.Lock()

    def record(what):
        with pushes_lock:
            pushes[what] = pushes.get(what, 0) + 1

    loki = Loki(d)
    loki.start()
    flags, faults = Flags(), Faults()
    proxy_port = free_port()
    make_proxy(proxy_port, loki.port, faults, flags, random.Random(args.seed + 1), record)
    agent = Agent(binary, d, proxy_port, free_port(), free_port())
    writers = Writers(d, args.rate, random.Random(args.seed + 2))
    agent.start()
    t0, start_ns = time.time(), time.time_ns() - 60 * 10**9
    stop = threading.Event()
    sent_at, acked = array.array("d"), array.array("q")
    threads = [threading.Thread(target=writers.run, args=(stop,)),
               threading.Thread(target=syslogger, args=(agent.ports[0], stop, sent_at)),
               threading.Thread(target=pusher, args=(agent.ports[1], stop, acked))]
    for th in threads:
        th.start()
    events = schedule(rng, seconds, args.kills, args.loki_restarts, args.windows)
    kills = drive(events, t0, seconds, loki, agent, writers, faults, rng)
    stop.set()
    for th in threads:
        th.join()
    log(f"writers stopped: {sum(writers.written)} file lines, {len(sent_at)} syslog, {len(acked)} pushed acknowledged")

    span = int(time.time() - t0) + 600
    wait_delivered(loki, agent, {FILES: sum(writers.written), SYSLOG: len(sent_at), PUSH: len(acked)}, span)
    agent.stop()
    end_ns = time.time_ns() + 60 * 10**9

    report = {"seed": args.seed, "minutes": args.minutes, "binary": binary, "kills": len(kills),
              "loki_restarts": faults.epoch, "loki_sigkilled": loki.killed, "rotations": writers.rotations,
              "pushes": pushes}
    wants = {FILES: [(i, s) for i in range(20) for s in range(writers.written[i])],
             SYSLOG: [(SRC_SYSLOG, s) for s in range(len(sent_at))],
             PUSH: [(SRC_PUSH, s) for s in acked]}
    # TCP has no acknowledgement: what the kernel held for a killed agent, sent
    # up to 2 s before the kill or before it listened again, is gone.
    cut = {FILES: lambda seq: False, PUSH: lambda seq: False,
           SYSLOG: lambda seq: any(k - 2 <= sent_at[seq] <= back for k, back in kills)}
    failures = []
    for job, want in wants.items():
        r = report[job] = count(job, want, loki.entries(job, start_ns, end_ns), loki.stored(job, end_ns, span),
                                flags, cut[job])
        if r["lost"] or r["twice_new_timestamp"] or r["twice_exact_copies"]:
            failures.append(job)
    lines = sum(report[j]["found"] for j in wants)
    report["agent"] = {"peak_rss_mib": round(agent.peak_rss / 1024, 1),
                       "median_rss_mib": round(sorted(agent.rss)[len(agent.rss) // 2] / 1024, 1) if agent.rss else 0,
                       "fds_max": max(agent.fds, default=0),
                       "cpu_s_per_million_lines": round(agent.cpu / max(lines, 1) * 1e6, 1)}
    print(json.dumps(report, indent=1))
    loki.stop()
    if failures:
        log(f"FAILED: {', '.join(failures)} (work directory kept: {d})")
        sys.exit(1)
    log("passed: nothing lost or stored twice")
    if not args.dir:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
