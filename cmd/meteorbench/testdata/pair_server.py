#!/usr/bin/python3
"""A REST/gRPC pair of meteorbench's contract (docs/contract.md) on TWO
ports, written apart from meteorbench for its tests, as the original
experiment's servers were: REST JSON on http.server (HTTP/1.1, one port)
and gRPC on grpcio (C-core HTTP/2, another port). Debian's python3-grpcio
and python3-protobuf; no protoc, no generated code: the message classes are
built at run time from a FileDescriptorSet of api/meteor.proto
(`protoc --include_imports -o meteor.pb -I api api/meteor.proto`, or the
one the Go test writes from the generated package).

Serves, all four scenarios: REST JSON small, large, stream (NDJSON) and
post, with ?records=N up to the file's records; gRPC GetVersion,
GetLargePayloadAsList, GetLargePayload (server stream) and
PostLargePayload, with the metadata meteorbench-records: N; and the
streams both ways over gRPC: UploadStream, Chat (each message echoed) and
Feed (records at the rate asked for, each with sent_unix_nano, field 11,
appended to its encoded bytes). /healthz on the
REST port. Lacks, on purpose: rest-protobuf (406/415), meteorbench's
/metrics, and grpc.health.v1 (Debian ships no grpc_health module).

Usage: pair_server.py DESCRIPTORS.pb DATA_FILE [REST_PORT GRPC_PORT]
Prints "listening rest=HOST:PORT,grpc=HOST:PORT", then serves until killed.
"""
import json
import signal
import sys
import threading
import time
from concurrent import futures
from http.server import ThreadingHTTPServer

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from contract_server import convert  # the file's records as the contract answers them
from contract_server import Handler as ContractHandler

PACKAGE = "MeteoriteLandingsService"
SERVICE = PACKAGE + ".MeteoriteLandingsService"


def message_classes(path):
    """The contract's message classes, from a FileDescriptorSet."""
    with open(path, "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    added = set()
    files = {f.name: f for f in fds.file}

    def add(name):  # dependencies first
        if name in added:
            return
        for dep in files[name].dependency:
            add(dep)
        pool.Add(files[name])
        added.add(name)

    for name in files:
        add(name)

    def cls(name):
        desc = pool.FindMessageTypeByName(PACKAGE + "." + name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
            return message_factory.GetMessageClass(desc)
        return message_factory.MessageFactory(pool).GetPrototype(desc)

    return {n: cls(n) for n in ("Version", "MeteoriteLanding", "MeteoriteLandingList", "StatusResponse", "FeedRequest")}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class Data:
    """The answers, encoded once: JSON for REST, protobuf for gRPC."""

    def __init__(self, classes, records):
        self.records = records
        self.json_list = json.dumps(records, separators=(",", ":")).encode()
        self.json_lines = [json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records]
        landing = classes["MeteoriteLanding"]
        self.pb_records = [json_format.ParseDict(r, landing()).SerializeToString() for r in records]
        # A MeteoriteLandingList is field 1 repeated: each record tagged.
        self.pb_entries = [b"\x0a" + varint(len(b)) + b for b in self.pb_records]
        self.pb_list = b"".join(self.pb_entries)
        self.version = classes["Version"](api_version="API Version 1.0").SerializeToString()
        self.success = classes["StatusResponse"](status="SUCCESS").SerializeToString()
        self.list_class = classes["MeteoriteLandingList"]
        self.landing_class = classes["MeteoriteLanding"]
        self.feed_class = classes["FeedRequest"]


def records_asked(value, total):
    """The records asked for (?records=N, meteorbench-records: N): None for
    all, or N; ValueError when not 1..total."""
    if value is None:
        return None
    n = int(value)
    if n < 1 or n > total:
        raise ValueError("records %s: this server serves 1 to %d" % (value, total))
    return n


def rest_handler(data):
    class Handler(ContractHandler):  # answer, the post and the quiet log
        # The status line and headers are written apart from the body:
        # without TCP_NODELAY, Nagle and the client's delayed ACK add 40 ms.
        disable_nagle_algorithm = True

        def query_records(self):
            _, _, query = self.path.partition("?")
            for part in query.split("&"):
                key, _, value = part.partition("=")
                if key == "records":
                    return records_asked(value, len(data.records))
            return None

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self.answer(200, {"status": "ok"})
                return
            if "application/x-protobuf" in self.headers.get("Accept", ""):
                self.answer(406, {"error": "this server answers JSON only"})
                return
            try:
                n = self.query_records()
            except ValueError as e:
                self.answer(400, {"error": str(e)})
                return
            if path == "/api/MeteoriteLandings":
                self.answer(200, "API Version 1.0")
            elif path == "/api/MeteoriteLandings/LargePayload":
                body = data.json_list if n is None else json.dumps(data.records[:n], separators=(",", ":")).encode()
                self.answer(200, body)
            elif path == "/api/MeteoriteLandings/LargePayload/stream":
                self.answer(200, b"".join(data.json_lines[:n]), "application/x-ndjson")
            else:
                self.answer(404, {"error": "no such path: " + path})

        def refuse_post(self):
            if not self.headers.get("Content-Type", "").startswith("application/json"):
                self.answer(415, {"error": "this server reads JSON only"})
                return True
            return False

        def check_post(self, value):
            if not isinstance(value, list):
                raise ValueError("not a list of records")

    return Handler


def grpc_handlers(data):
    def records(context):
        md = dict(context.invocation_metadata())
        try:
            return records_asked(md.get("meteorbench-records"), len(data.records))
        except ValueError as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))

    def get_version(request, context):
        return data.version

    def get_list(request, context):
        n = records(context)
        return data.pb_list if n is None else b"".join(data.pb_entries[:n])

    def get_stream(request, context):
        n = records(context)
        for b in data.pb_records[:n]:
            yield b

    def post_list(request, context):
        # request is the decoded MeteoriteLandingList: the whole body parsed.
        if not request.MeteoriteLandings:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no records")
        return data.success

    def upload(request_iterator, context):
        for _ in request_iterator:  # each record decoded as it arrives
            pass
        return data.success

    def chat(request_iterator, context):
        for message in request_iterator:  # bytes: the same seq, send time and text back
            yield message

    def feed(request, context):
        n = request.messages or 1000
        if n > len(data.records) or request.rate < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "messages 1..%d, rate >= 0" % len(data.records))
        start = time.monotonic()
        for i, b in enumerate(data.pb_records[:n]):
            if request.rate > 0:
                wait = start + i / request.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            yield b + b"\x58" + varint(time.time_ns())  # field 11, varint: the send time

    # Answers are bytes encoded once (no serializer); requests are not
    # decoded, except the post's, which the contract says is decoded whole.
    return grpc.method_handlers_generic_handler(SERVICE, {
        "UploadStream": grpc.stream_unary_rpc_method_handler(
            upload, request_deserializer=data.landing_class.FromString),
        "Chat": grpc.stream_stream_rpc_method_handler(chat),
        "Feed": grpc.unary_stream_rpc_method_handler(feed, request_deserializer=data.feed_class.FromString),
        "GetVersion": grpc.unary_unary_rpc_method_handler(get_version),
        "GetLargePayloadAsList": grpc.unary_unary_rpc_method_handler(get_list),
        "GetLargePayload": grpc.unary_stream_rpc_method_handler(get_stream),
        "PostLargePayload": grpc.unary_unary_rpc_method_handler(
            post_list, request_deserializer=data.list_class.FromString),
    })


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__.strip().splitlines()[-2])
    classes = message_classes(sys.argv[1])
    with open(sys.argv[2], encoding="utf-8") as f:
        data = Data(classes, [convert(r) for r in json.load(f)])
    rest_port, grpc_port = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) == 5 else (0, 0)

    rest = ThreadingHTTPServer(("127.0.0.1", rest_port), rest_handler(data))
    rest.daemon_threads = True
    threading.Thread(target=rest.serve_forever, daemon=True).start()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=[
        ("grpc.max_receive_message_length", 64 << 20),
        ("grpc.max_send_message_length", 64 << 20),
    ])
    server.add_generic_rpc_handlers((grpc_handlers(data),))
    port = server.add_insecure_port("127.0.0.1:%d" % grpc_port)
    server.start()
    print("listening rest=%s:%d,grpc=127.0.0.1:%d" % (rest.server_address[0], rest.server_address[1], port), flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    stop.wait()
    server.stop(1)
    rest.shutdown()


if __name__ == "__main__":
    main()
