"""run.py with an extractor whose consolidations always add an entry, so a
tiny run (whose actor never wins and whose 2-step extractor answers noise)
still fills the bank, credits entries and trains the extractor. The entry's
text depends on what the real extractor sampled, so the sampling's seeding
is exercised too. Used in-process (patch) and as ``python -m`` (a run the
tests can SIGKILL)."""
from __future__ import annotations

import json
import sys

from crl_jax.experience import ExtractorReply
from crl_jax.rl.extractor import ExtractorAgent

_REAL = ExtractorAgent.__call__


def always_adds(self, request):
    reply = _REAL(self, request)
    if request.kind != "consolidate":
        return reply
    entry = f"{request.goal}: try {len(reply.response) % 5}"
    return ExtractorReply(reply.prompt, json.dumps([{"op": "add", "entry": entry}]))


def patch(monkeypatch=None) -> None:
    if monkeypatch is not None:
        monkeypatch.setattr(ExtractorAgent, "__call__", always_adds)
    else:
        ExtractorAgent.__call__ = always_adds


if __name__ == "__main__":
    patch()
    from experiments.run import main
    sys.exit(main(sys.argv[1:]))
