#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""HTTP/1.1 load for bench/load (standard library only): CONNECTIONS persistent connections at
once, REQUESTS requests in all, each connection asking for its own URLs one after another
(keep-alive), over the origins given as scheme://host[:port] (connection i uses origin i mod N).
Every URL is distinct: /load/NAME?c=CONNECTION&r=REQUEST, NAME from the manifest (lines "NAME
SHA256" of the files every origin serves under /load/). Each response body, de-chunked and
gunzipped, is compared with the manifest's digest of NAME. Prints one JSON object: counts of
answers, errors and mismatches, and the latencies (request written until the body is whole).

  load_client.py MANIFEST CONNECTIONS REQUESTS CA_FILE ORIGIN...
"""
import asyncio
import gzip
import hashlib
import json
import ssl
import sys
import time
import zlib


class Failure(Exception):
    pass


async def read_body(reader, headers):
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts = []
        while True:
            line = await reader.readline()
            if not line:
                raise Failure("connection closed inside a chunked body")
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass  # trailers
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    raise Failure("a response with neither Content-Length nor chunked coding")


async def exchange(reader, writer, path, name):
    writer.write(("GET %s HTTP/1.1\r\nHost: %s\r\nAccept-Encoding: gzip\r\nUser-Agent: bench-load\r\n\r\n"
                  % (path, name)).encode())
    status_line = await reader.readline()
    if not status_line:
        raise Failure("connection closed before the answer to %s" % path)
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers, await read_body(reader, headers)


async def connection(index, origin, names, digests, count, ca, results):
    scheme, host = origin.split("://")
    name, _, port = host.partition(":")
    port = int(port or (443 if scheme == "https" else 80))
    context = None
    if scheme == "https":
        context = ssl.create_default_context(cafile=ca)
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(name, port, ssl=context, server_hostname=name if context else None), 60)
    except Exception as e:
        results["errors"].append("connection %d to %s: %r" % (index, origin, e))
        return
    try:
        for r in range(count):
            file = names[(index * count + r) % len(names)]
            path = "/load/%s?c=%d&r=%d" % (file, index, r)
            start = time.monotonic()
            # A request unanswered for a minute is a failure, not a hang of the benchmark.
            status, headers, body = await asyncio.wait_for(exchange(reader, writer, path, name), 60)
            results["latencies"].append(time.monotonic() - start)
            results["bytes"] += len(body)
            if headers.get("content-encoding", "").lower() == "gzip":
                body = gzip.decompress(body)
                results["gzipped"] += 1
            if status != 200:
                results["errors"].append("%s%s: status %d" % (origin, path, status))
            elif hashlib.sha256(body).hexdigest() != digests[file]:
                results["mismatches"].append("%s%s" % (origin, path))
            else:
                results["ok"] += 1
    except (Failure, OSError, ValueError, IndexError, asyncio.IncompleteReadError, asyncio.TimeoutError, zlib.error,
            EOFError) as e:
        results["errors"].append("connection %d to %s: %s" % (index, origin, e))
    finally:
        writer.close()


async def main():
    manifest, connections, requests, ca = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    origins = sys.argv[5:]
    digests = dict(line.split() for line in open(manifest))
    names = sorted(digests)
    results = {"ok": 0, "errors": [], "mismatches": [], "latencies": [], "bytes": 0, "gzipped": 0}
    per = requests // connections
    start = time.monotonic()
    await asyncio.gather(*(connection(i, origins[i % len(origins)], names, digests, per, ca, results)
                           for i in range(connections)))
    elapsed = time.monotonic() - start
    lat = sorted(results["latencies"])
    q = lambda f: round(lat[min(len(lat) - 1, int(f * len(lat)))] * 1000, 2) if lat else None
    print(json.dumps({"requests": per * connections, "ok": results["ok"], "errors": len(results["errors"]),
                      "mismatches": len(results["mismatches"]), "first_problems": (results["errors"] + results["mismatches"])[:5],
                      "seconds": round(elapsed, 2), "requests_per_s": round(len(lat) / elapsed, 1),
                      "mbit_per_s": round(results["bytes"] * 8 / elapsed / 1e6, 1), "gzipped": results["gzipped"],
                      "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99), "max_ms": q(1.0)}))


if __name__ == "__main__":
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(main())
