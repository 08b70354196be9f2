"""Hooks for schemathesis runs against the HTTP API (test/integration/openapi-fuzz.test.ts).

Signs every webhook request the way the OA side does (domain-node/signature.ts): the exact body bytes
sent, HMAC-SHA256 with WEBHOOK_SECRET over "<timestamp>.<body>", as X-OA-Signature: sha256=<hex>.
Without it every generated approval would stop at 401 and the handler behind it would go untested.
Also checks that every 4xx outside the MCP transport is problem+json.
"""

import hashlib
import hmac
import json
import os
import time

import schemathesis
from schemathesis.core import NotSet

WEBHOOK_PATH = "/webhooks/oa/approvals"
SECRET = os.environ["WEBHOOK_SECRET"].encode()
# The MCP transport answers its protocol's refusals as JSON-RPC errors (docs/openapi.json says so).
JSON_RPC_REFUSALS = {("/mcp", 400), ("/mcp", 406), ("/mcp", 415)}


def body_bytes(case) -> bytes:
    """The body as it goes on the wire: serialized here so that the signature covers those bytes."""
    body = case.body
    if isinstance(body, NotSet):
        return b""
    if isinstance(body, bytes):
        return body
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


@schemathesis.hook
def before_call(context, case, kwargs):
    if case.operation.path != WEBHOOK_PATH:
        return
    if case.media_type is not None and case.media_type.split(";")[0].strip() != "application/json":
        return
    raw = body_bytes(case)
    timestamp = str(int(time.time()))
    digest = hmac.new(SECRET, timestamp.encode() + b"." + raw, hashlib.sha256).hexdigest()
    kwargs["data"] = raw
    case.headers = {
        **(case.headers or {}),
        "Content-Type": "application/json",
        "X-OA-Timestamp": timestamp,
        "X-OA-Signature": f"sha256={digest}",
    }


@schemathesis.check
def client_errors_are_problem_json(ctx, response, case):
    """Every refusal is RFC 9457 problem+json, except the MCP transport's own JSON-RPC errors."""
    if not 400 <= response.status_code < 500:
        return None
    if (case.operation.path, response.status_code) in JSON_RPC_REFUSALS:
        return None
    content_type = response.headers.get("content-type", [""])
    if isinstance(content_type, list):
        content_type = content_type[0] if content_type else ""
    if not content_type.startswith("application/problem+json"):
        raise AssertionError(f"{response.status_code} answered as {content_type!r}, not application/problem+json")
    return None
