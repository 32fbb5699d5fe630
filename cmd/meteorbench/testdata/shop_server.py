#!/usr/bin/python3
"""A shop's REST and gRPC API (testdata/shop/shop.proto), written apart from
meteorbench for its endpoints test: REST JSON on http.server, gRPC on
grpcio (C-core HTTP/2), both in this one process. The JSON is what
protobuf's own json_format writes for the same messages (the order
under its .proto field names, the tree under lowerCamelCase ones; enum
names, 64-bit integers as strings, RFC 3339 times). No
generated code: the message classes come from a FileDescriptorSet.

Usage: shop_server.py DESCRIPTORS.pb
Prints "listening rest=HOST:PORT,grpc=HOST:PORT", then serves until killed.
"""
import signal
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def classes(path):
    with open(path, "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    files = {f.name: f for f in fds.file}
    added = set()

    def add(name):
        if name in added:
            return
        for dep in files[name].dependency:
            add(dep)
        pool.Add(files[name])
        added.add(name)

    for name in files:
        add(name)

    def cls(name):
        desc = pool.FindMessageTypeByName("shop.v1." + name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
            return message_factory.GetMessageClass(desc)
        return message_factory.MessageFactory(pool).GetPrototype(desc)

    return {n: cls(n) for n in ("Order", "Category", "GetOrderRequest", "CategoriesRequest")}


def make_order(c):
    order = c["Order"](id="1", status=2, note="", card_last4="4242")
    order.created.FromJsonString("2024-05-01T10:00:00.250Z")
    order.attributes.update({"channel": "web", "gift": "yes", "coupon-code": "SPRING24"})
    for i in range(1, 6):
        line = order.lines["sku-%d" % i]
        line.sku, line.quantity = "sku-%d" % i, i
        line.price.currency, line.price.units, line.price.nanos = "EUR", 10 * i, 500000000
    order.total.currency, order.total.units = "EUR", 9007199254740993
    order.tracking_ids.extend([1, 2, 9007199254740993])
    return order


def make_tree(c, depth, fanout=3, slug="root"):
    node = c["Category"](slug=slug, name=slug.replace("-", " ").title())
    node.counts.update({"products": depth * 10, "offers": depth})
    if depth > 0:
        for i in range(fanout):
            node.children.append(make_tree(c, depth - 1, fanout, "%s-%d" % (slug, i)))
    return node


def main():
    c = classes(sys.argv[1])
    order, tree = make_order(c), make_tree(c, 4)
    # The order under its .proto field names (card_last4), as many REST
    # frameworks write them; the tree under the JSON names (lowerCamelCase).
    rest = {"/orders/1": json_format.MessageToJson(order, preserving_proto_field_name=True).encode(),
            "/categories": json_format.MessageToJson(tree).encode()}
    grpc_answers = {"/shop.v1.Shop/GetOrder": order.SerializeToString(), "/shop.v1.Shop/GetCategories": tree.SerializeToString()}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_GET(self):
            body = b'{"status":"ok"}' if self.path == "/healthz" else rest.get(self.path)
            if body is None:
                body, code = b'{"error":"not found"}', 404
            else:
                code = 200
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def answer(path):
        def unary(request, context):
            return grpc_answers[path]  # raw bytes: no serializer
        return grpc.unary_unary_rpc_method_handler(unary)

    handlers = {path.rsplit("/", 1)[1]: answer(path) for path in grpc_answers}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("shop.v1.Shop", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print("listening rest=127.0.0.1:%d,grpc=127.0.0.1:%d" % (httpd.server_address[1], port), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.wait_for_termination()


if __name__ == "__main__":
    main()
