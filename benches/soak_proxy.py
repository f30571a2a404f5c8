"""The soak's recording proxy (benches/soak.py): between the agent and Loki,
it forwards every request, injects the fault of the moment (429 with
Retry-After, 503, a connection reset before or after Loki answered, 502
while Loki is down) and records, per line pushed, whether Loki acknowledged
it and in which of Loki's runs, so that each line lost can be attributed."""
import gzip, http.client, http.server, json, socket, socketserver, struct, threading


class Flags:
    """Per source, per sequence number: what the proxy saw of the line."""
    SENT, ACKED, ACKED_AGAIN, RESET_AFTER_ACK = 1, 2, 4, 8

    def __init__(self):
        self.lock = threading.Lock()
        self.by_src = {}

    def mark(self, src, seq, ok, reset, epoch):
        with self.lock:
            a = self.by_src.setdefault(src, bytearray())
            if seq >= len(a):
                a.extend(bytes(seq + 1 - len(a) + 4096))
            f = a[seq] | self.SENT
            if ok:
                if f & self.ACKED:
                    f |= self.ACKED_AGAIN
                else:
                    f |= self.ACKED | (min(epoch, 15) << 4)  # which Loki run acknowledged it
                if reset:
                    f |= self.RESET_AFTER_ACK
            a[seq] = f

    def get(self, src, seq):
        a = self.by_src.get(src, b"")
        return a[seq] if seq < len(a) else 0


def line_id(line):
    """`soak <src> <seq> ...` -> (src, seq), or None for a line not ours."""
    parts = line.split(" ", 3)
    if len(parts) < 3 or parts[0] != "soak":
        return None
    try:
        return int(parts[1]), int(parts[2])
    except ValueError:
        return None


class Faults:
    """The proxy's fault of the moment: None, '429', '503' or 'reset'."""

    def __init__(self):
        self.mode = None
        self.epoch = 0  # Loki's restarts so far


def make_proxy(port, loki_port, faults, flags, rng, record):
    rng_lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def finish(self):
            try:
                super().finish()
            except (OSError, ValueError):
                pass

        def do_GET(self):
            self.relay(b"")

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            self.relay(self.rfile.read(n) if n else b"")

        def reset(self):
            self.close_connection = True
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            except OSError:
                pass

        def answer(self, status, body, headers=()):
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def forward(self, body):
            try:
                c = http.client.HTTPConnection("127.0.0.1", loki_port, timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "host")}
                c.request(self.command, self.path, body=body or None, headers=headers)
                r = c.getresponse()
                data = r.read()
                keep = [(k, v) for k, v in r.getheaders() if k.lower() in ("content-type", "retry-after")]
                c.close()
                return r.status, data, keep
            except (OSError, http.client.HTTPException):
                return 502, b"loki is down\n", []

        def relay(self, body):
            push = self.command == "POST" and self.path.endswith("/push")
            mode = faults.mode
            with rng_lock:
                after = rng.random() < 0.5
            if mode == "429":
                status, data, headers, reset = 429, b"too many requests\n", [("Retry-After", "1")], False
            elif mode == "503":
                status, data, headers, reset = 503, b"unavailable\n", [], False
            elif mode == "reset" and not after:
                status, data, headers, reset = None, b"", [], True
            else:
                status, data, headers = self.forward(body)
                reset = mode == "reset"
            if push:
                self.record(body, status, reset)
            if reset:
                self.reset()
            else:
                self.answer(status, data, headers)

        def record(self, body, status, reset):
            try:
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                streams = json.loads(body)["streams"]
            except (OSError, ValueError, KeyError):
                record(f"undecodable push {status}")
                return
            ok = status is not None and 200 <= status < 300
            for s in streams:
                for v in s.get("values", []):
                    i = line_id(v[1])
                    if i:
                        flags.mark(i[0], i[1], ok, reset, faults.epoch)
            record(f"push {'reset' if status is None else status}{' then reset' if reset else ''}")

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request, client_address):
            pass  # a connection the agent dropped (killed) or the proxy reset

    srv = Server(("127.0.0.1", port), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv
