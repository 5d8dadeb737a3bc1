"""Injection fixtures: rewrite a complete fake study's results files with markup in every field the report reads.

Each altered run is re-sealed (``COMPLETE`` lists the new digests), so the report accepts it as complete:
the report must neutralise the content, not rely on the marker. One run also gets files that ``COMPLETE``
does not list; the report must treat that run as incomplete.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

HTML_PAYLOAD = ('"><img src=x onerror=alert(1)><svg onload=alert(2)><script>alert(3)</script>'
                "<a href=javascript:alert(4) onmouseover=alert(5)>x</a>")
MD_PAYLOAD = "[click](javascript:alert(6)) ![pixel](http://example.invalid/p.png) `code` | cell"
PAYLOAD = HTML_PAYLOAD + " " + MD_PAYLOAD
EXTRA_FILES = ("dropped.png", "dropped.json")


def _reseal(run: Path) -> None:
    marker = run / "COMPLETE"
    data = json.loads(marker.read_text())
    data["files"] = {n: hashlib.sha256((run / n).read_bytes()).hexdigest() for n in data["files"]}
    marker.write_text(json.dumps(data))


def _poison(obj, depth: int = 0):
    """Every string value and key replaced by the payload-bearing version (structure kept)."""
    if isinstance(obj, str):
        return obj + PAYLOAD
    if isinstance(obj, list):
        return [_poison(x, depth + 1) for x in obj]
    if isinstance(obj, dict):
        out = {k: _poison(v, depth + 1) for k, v in obj.items()}
        if depth < 2:
            out[PAYLOAD] = PAYLOAD
        return out
    return obj


def inject(out: Path) -> dict[str, str]:
    """Poison the fake study under ``out``; return {what: run name} for the assertions."""
    runs = sorted(p for p in (out / "runs").iterdir() if p.is_dir())
    derive = next(p for p in runs if (p / "derivation.json").is_file())
    d = json.loads((derive / "derivation.json").read_text())
    for e in d["ledger"]:
        e["status"] = HTML_PAYLOAD                       # the field that used to reach a class attribute
        e["derived"] = e["claim"] = PAYLOAD
        e["statements"] = [{"status": HTML_PAYLOAD, "text": PAYLOAD}]
    for disp in d["displays"]:
        disp["title"] = disp["check"] = PAYLOAD
        disp["latex"] = "x" + PAYLOAD
        disp["mathml"] = disp["mathml"] + HTML_PAYLOAD
    d["model"] = d["summary"] = PAYLOAD
    (derive / "derivation.json").write_text(json.dumps(d))
    for run in runs:
        for name in ("config.json", "manifest.json", "metrics.json"):
            if (run / name).is_file():
                (run / name).write_text(json.dumps(_poison(json.loads((run / name).read_text()))))
        if (run / "claims.json").is_file():
            ev = json.loads((run / "claims.json").read_text())["evidence"]
            for e in ev:
                e["numbers"] = e["text"] = PAYLOAD
            ev.append(dict(ev[0], figure=PAYLOAD))
            ev.append(dict(ev[0], verdict=HTML_PAYLOAD))   # rejected: not a verdict
            ev.append(dict(ev[0], claim=HTML_PAYLOAD))     # rejected: not a claim
            ev.append(dict(ev[0], stage=HTML_PAYLOAD))     # rejected: not a stage of the claim
            (run / "claims.json").write_text(json.dumps({"evidence": ev}))
        _reseal(run)
    summary = out / "reproduce.json"
    if summary.is_file():
        s = json.loads(summary.read_text())
        s["cluster"] = PAYLOAD
        s["skipped"] = [PAYLOAD]
        s["stages"] = s["stages"] + [{"name": PAYLOAD, "module": PAYLOAD, "state": PAYLOAD, "n_runs": 1}]
        s["runs"] = s["runs"] + [{"name": PAYLOAD, "stage": PAYLOAD, "status": "failed", "error": PAYLOAD}]
        summary.write_text(json.dumps(s))
    target = next(p for p in runs if p.name.startswith("simulate"))
    src = next(target.glob("*.png"))
    (target / EXTRA_FILES[0]).write_bytes(src.read_bytes())
    (target / EXTRA_FILES[1]).write_text(json.dumps({"evidence": [], "note": PAYLOAD}))
    return {"derive": derive.name, "extra": target.name}
