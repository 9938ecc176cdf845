"""A test agent that runs inside a network namespace the netns suite created.

It reads one JSON request per line on stdin and answers one JSON line per request on stdout (with the request's id),
each request handled on its own thread so that a connection and the listener it reaches can live in the same agent:

  {"id": 1, "op": "listen", "host": "0.0.0.0", "port": 4143, "tag": "proxy-inbound"}
      Accepts connections and answers each with one JSON line: the listener's tag, the address the client connected
      to before any NAT (SO_ORIGINAL_DST, which Node cannot read), and the client's address.
  {"id": 2, "op": "connect", "host": "192.0.2.2", "port": 80, "source": "192.0.2.3", "timeout": 2}
      Connects (from `source` if given), reads the listener's line, and returns it.
  {"id": 3, "op": "validate", "listen": ["0.0.0.0", 4140], "connect": ["203.0.113.20", 20001], "timeout": 1}
      What linkerd-network-validator does: listen, connect elsewhere, and succeed only if the listener's own random
      token comes back before the timeout.

`--uid N --gid N` drops to that user before reading requests, so the kernel sees the connections as that user's.
"""

import json
import os
import secrets
import socket
import string
import struct
import sys
import threading
import time

SO_ORIGINAL_DST = 80  # linux/netfilter_ipv4.h; the IPv6 variant (IP6T_SO_ORIGINAL_DST) has the same number
SOL_IPV6 = getattr(socket, "SOL_IPV6", 41)

out_lock = threading.Lock()


def emit(message):
    with out_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def show(address):
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def original_destination(conn):
    try:
        if conn.family == socket.AF_INET6:
            raw = conn.getsockopt(SOL_IPV6, SO_ORIGINAL_DST, 28)
            port = struct.unpack("!H", raw[2:4])[0]
            return show((socket.inet_ntop(socket.AF_INET6, raw[8:24]), port))
        raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
        port = struct.unpack("!H", raw[2:4])[0]
        return show((socket.inet_ntop(socket.AF_INET, raw[4:8]), port))
    except OSError:
        # No conntrack entry: nothing rewrote this connection.
        return None


def bind_listener(host, port):
    server = socket.socket(family_of(host), socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if server.family == socket.AF_INET6:
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    server.bind((host, port))
    server.listen(128)
    return server


def serve(server, answer):
    while True:
        conn, peer = server.accept()
        try:
            conn.sendall(answer(conn, peer))
        except OSError:
            pass
        finally:
            conn.close()


def listen(request):
    tag = request["tag"]
    server = bind_listener(request["host"], request["port"])

    def answer(conn, peer):
        reply = {"listener": tag, "original": original_destination(conn), "client": show(peer)}
        return (json.dumps(reply) + "\n").encode()

    threading.Thread(target=serve, args=(server, answer), daemon=True).start()
    return {"ok": True}


def read_line(conn, limit):
    data = b""
    while len(data) < limit and not data.endswith(b"\n"):
        chunk = conn.recv(limit - len(data))
        if not chunk:
            break
        data += chunk
    return data


def open_connection(host, port, source, timeout):
    conn = socket.socket(family_of(host), socket.SOCK_STREAM)
    conn.settimeout(timeout)
    if source:
        conn.bind((source, 0))
    conn.connect((host, port))
    return conn


def error_text(error):
    if isinstance(error, socket.timeout):
        return "timeout"
    return f"{type(error).__name__}: {error}"


def connect(request):
    try:
        conn = open_connection(request["host"], request["port"], request.get("source"), request["timeout"])
        try:
            line = read_line(conn, 4096)
        finally:
            conn.close()
        return {"ok": True, "reply": json.loads(line)}
    except (OSError, ValueError) as error:
        return {"ok": False, "error": error_text(error)}


def validate(request):
    started = time.monotonic()
    deadline = started + request["timeout"]
    token = ("".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(63)) + "\n").encode()
    try:
        server = bind_listener(*request["listen"])
    except OSError as error:
        return {"ok": False, "error": error_text(error), "elapsed": time.monotonic() - started}
    threading.Thread(target=serve, args=(server, lambda conn, peer: token), daemon=True).start()
    try:
        conn = open_connection(*request["connect"], None, max(0.001, deadline - time.monotonic()))
        try:
            conn.settimeout(max(0.001, deadline - time.monotonic()))
            data = read_line(conn, len(token))
        finally:
            conn.close()
        if data != token:
            return {"ok": False, "error": f"got {data!r} instead of the token", "elapsed": time.monotonic() - started}
        return {"ok": True, "elapsed": time.monotonic() - started}
    except OSError as error:
        return {"ok": False, "error": error_text(error), "elapsed": time.monotonic() - started}


OPS = {"listen": listen, "connect": connect, "validate": validate}


def handle(request):
    try:
        result = OPS[request["op"]](request)
    except Exception as error:  # a bad request must not kill the agent silently
        result = {"ok": False, "error": error_text(error)}
    result["id"] = request.get("id")
    emit(result)


def main():
    args = sys.argv[1:]
    if "--gid" in args:
        os.setgroups([])
        os.setgid(int(args[args.index("--gid") + 1]))
    if "--uid" in args:
        os.setuid(int(args[args.index("--uid") + 1]))
    emit({"ready": True, "uid": os.getuid(), "gid": os.getgid()})
    for line in sys.stdin:
        if line.strip():
            threading.Thread(target=handle, args=(json.loads(line),), daemon=True).start()


if __name__ == "__main__":
    main()
