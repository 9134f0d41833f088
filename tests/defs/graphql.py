"""One GraphQL query against a Dagster webserver (what the UI asks), for the server tests."""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``data`` of ``query`` at ``url/graphql``; AssertionError with the errors if any."""
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(
        f"{url}/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        answer: dict[str, Any] = json.load(reply)
    assert not answer.get("errors"), answer["errors"]
    data: dict[str, Any] = answer["data"]
    return data
