"""Where torch training runs: ``auto | cpu | cuda[:N] | mps``, resolved once before any work.

:func:`resolve_device` turns the user's text into a :class:`torch.device` or raises
:class:`DeviceError` (a ``ValueError`` whose message is one line ``device: <value>: <why>``, so
the CLI prints ``qkov: error: device: cuda: ...`` and exits 2 before anything is written).
``auto`` picks the first present of CUDA (device 0), MPS, CPU. :func:`autocast` is the optional
bf16 mixed precision of the forward pass on CUDA (off by default; refused elsewhere, because CPU
bf16 autocast is slow and not what a user asking for speed wants). :func:`device_record` is what
a run writes into its manifest.

Seeds: ``torch.manual_seed`` seeds CPU and every CUDA device; the same seed gives the same
initialisation on every device (parameters are created on the CPU and moved), but the training
trajectory on CUDA or MPS differs from the CPU's at float rounding (other kernels, reduction
orders), so a run is reproducible per device, not bitwise across devices.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import torch

DEVICE_CHOICES = "auto, cpu, cuda, cuda:N or mps"
_PATTERN = re.compile(r"auto|cpu|mps|cuda(:\d{1,3})?")


class DeviceError(ValueError):
    """A device that is not understood or not present (one line: ``device: <value>: <why>``);
    ``why`` is the part after the value (for a CLI field error)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.why = message.split(": ", 2)[-1]


def parse_device(text: str) -> str:
    """The canonical spelling of a device request (``auto``, ``cpu``, ``mps``, ``cuda``, ``cuda:N``),
    without checking that it is present; :class:`DeviceError` for anything else."""
    t = str(text).strip().lower()
    if not _PATTERN.fullmatch(t):
        raise DeviceError(f"device: {text}: must be one of {DEVICE_CHOICES}")
    return t


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(text: str = "auto") -> torch.device:
    """The :class:`torch.device` of a request, checked present (``DeviceError`` otherwise).

    ``auto`` -> ``cuda:0`` if CUDA is available, else ``mps`` if available, else ``cpu``;
    ``cuda`` means ``cuda:0``; ``cuda:N`` needs ``N < torch.cuda.device_count()``.
    """
    t = parse_device(text)
    if t == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", 0)
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    if t == "cpu":
        return torch.device("cpu")
    if t == "mps":
        if not _mps_available():
            raise DeviceError("device: mps: not available (no Apple-silicon MPS backend in this torch build or "
                              "machine); use cpu or auto")
        return torch.device("mps")
    if not torch.cuda.is_available():
        build = "a CPU-only torch build" if torch.version.cuda is None else "no CUDA device visible"
        raise DeviceError(f"device: {t}: not available ({build}); use cpu or auto, or install a CUDA build of torch")
    index = int(t.split(":")[1]) if ":" in t else 0
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"device: {t}: not available ({count} CUDA device(s): cuda:0..cuda:{count - 1})")
    return torch.device("cuda", index)


def check_autocast(device: torch.device, bf16: bool) -> None:
    """``DeviceError`` when bf16 autocast is asked for on a device other than CUDA."""
    if bf16 and device.type != "cuda":
        raise DeviceError(f"device: {device}: bf16 autocast is only offered on CUDA; drop --bf16 or use a cuda device")


def autocast(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager:
    """``torch.autocast(cuda, bfloat16)`` when ``bf16`` (CUDA only), else a no-op context."""
    if not bf16:
        return contextlib.nullcontext()
    check_autocast(device, bf16)
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16)


def device_record(device: torch.device, bf16: bool = False, requested: str | None = None) -> dict[str, Any]:
    """What a run records about where it ran: the request, the device, its name and the precision."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    return {"requested": requested if requested is not None else str(device), "device": str(device),
            "name": name, "autocast": "bf16" if bf16 else None, "torch": torch.__version__,
            "cuda": torch.version.cuda}


__all__ = ["DeviceError", "parse_device", "resolve_device", "check_autocast", "autocast", "device_record",
           "DEVICE_CHOICES"]
