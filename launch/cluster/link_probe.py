#!/usr/bin/python3
"""Measures one TCP link of the namespace cluster: throughput of a bulk transfer and round-trip
time of 1-byte messages. Run the server on one host and the client on another:

  netns_cluster.sh exec h1 link_probe.py server ADDR
  netns_cluster.sh exec h0 link_probe.py client ADDR --mb 64      # prints one JSON line

The client sends MB megabytes and stops the clock when the server confirms it has read them all
(so buffering in the sender does not count as delivery), then times 200 ping-pongs.
"""
import argparse
import json
import socket
import statistics
import struct
import time

PORT = 5799
CHUNK = 1 << 20


def recv_exact(c, n):
    buf = bytearray()
    while len(buf) < n:
        b = c.recv(n - len(buf))
        if not b:
            raise SystemExit("link_probe: connection closed early")
        buf += b
    return bytes(buf)


def server(addr):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, PORT))
    s.listen(1)
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    (total,) = struct.unpack("!Q", recv_exact(c, 8))
    got = 0
    while got < total:
        b = c.recv(min(CHUNK, total - got))
        if not b:
            raise SystemExit("link_probe: connection closed early")
        got += len(b)
    c.sendall(b"k")
    (pings,) = struct.unpack("!I", recv_exact(c, 4))
    for _ in range(pings):
        c.sendall(recv_exact(c, 1))
    c.close()


def client(addr, mb, pings):
    for _ in range(100):  # the server may still be starting
        try:
            c = socket.create_connection((addr, PORT))
            break
        except OSError:
            time.sleep(0.05)
    else:
        raise SystemExit(f"link_probe: no server at {addr}:{PORT}")
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    total = mb * CHUNK
    buf = b"\0" * CHUNK
    t0 = time.perf_counter()
    c.sendall(struct.pack("!Q", total))
    for _ in range(mb):
        c.sendall(buf)
    recv_exact(c, 1)
    dt = time.perf_counter() - t0
    c.sendall(struct.pack("!I", pings))
    rtts = []
    for _ in range(pings):
        t = time.perf_counter()
        c.sendall(b"p")
        recv_exact(c, 1)
        rtts.append(time.perf_counter() - t)
    c.close()
    print(json.dumps({"bytes": total, "seconds": dt, "tcp_gbps": total * 8 / dt / 1e9,
                      "rtt_us_median": 1e6 * statistics.median(rtts),
                      "rtt_us_min": 1e6 * min(rtts)}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["server", "client"])
    p.add_argument("addr")
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--pings", type=int, default=200)
    a = p.parse_args()
    if a.mode == "server":
        server(a.addr)
    else:
        client(a.addr, a.mb, a.pings)


if __name__ == "__main__":
    main()
