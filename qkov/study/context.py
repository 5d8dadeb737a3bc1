"""What a run receives besides its kind, config and directory: the :class:`RunContext`.

The study engine (:mod:`qkov.study.engine`) calls every stage as ``execute(kind, config, run_dir, ctx)``.
The context is the one hand-off between the engine and a stage: the device and precision a run trains
at, the threads it may use, whether it draws progress bars, and the results store it writes into. Nothing
travels through ``os.environ``: a context is a frozen dataclass of plain values, pickled with the task to
a Dask worker (in this process or another machine) exactly as it was built by the caller.

Importing this module costs no torch: :meth:`RunContext.thread_scope` imports it only when a run enters it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Iterator

PRECISIONS = ("float32", "bf16")
"""Training precisions of the torch runs: ``float32``, or bf16 autocast of the forward pass (CUDA only)."""


@dataclasses.dataclass(frozen=True)
class RunContext:
    """How the runs of one command execute (the same for every run of it).

    ``device``: where torch runs train (``auto | cpu | cuda[:N] | mps``; only the real-data stage trains
    off the CPU, the synthetic, Figure 2 and optimizer runs are CPU float64 by design and ignore it);
    ``precision``: ``float32`` or ``bf16`` (:data:`PRECISIONS`); ``threads``: torch intra-op threads
    while a run executes (``None``: leave the process's setting), restored when the run ends;
    ``progress``: per-run progress bars (a command run in the foreground), ``None`` = the stage's default;
    ``store``: the results directory the runs are written into (``<store>/runs/<kind>-<key>/``).
    """

    device: str = "cpu"
    precision: str = "float32"
    threads: int | None = 1
    progress: bool | None = False
    store: Path | None = None

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision: {self.precision!r}: must be one of {', '.join(PRECISIONS)}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads: {self.threads}: must be at least 1 (or None)")

    @property
    def bf16(self) -> bool:
        """True iff the forward pass runs under bf16 autocast."""
        return self.precision == "bf16"

    def replace(self, **changes) -> "RunContext":
        """A copy with ``changes`` (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    @contextlib.contextmanager
    def thread_scope(self) -> Iterator[None]:
        """The body runs with ``torch.set_num_threads(self.threads)``; the previous count is restored after.

        Small models: one intra-op thread is fastest and shares a busy machine well. ``threads=None`` changes
        nothing (and imports nothing).
        """
        if self.threads is None:
            yield
            return
        import torch

        old = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(old)


DEFAULT_CONTEXT = RunContext()
"""The context of a run called without one (a test, a user calling a stage directly): CPU, float32, one
thread, no progress bars."""


def device_context(device: str | None, bf16: bool, **fields) -> RunContext:
    """The :class:`RunContext` for a ``--device``/``--bf16`` request, checked first: an unknown or absent
    device, or bf16 off CUDA, is a :class:`validation.device.DeviceError` (one line) before any work.
    ``device`` ``None`` means ``auto``. Imports torch (to look for the device)."""
    from validation.device import check_autocast, parse_device, resolve_device

    text = parse_device(device if device is not None else "auto")
    check_autocast(resolve_device(text), bf16)
    return RunContext(device=text, precision="bf16" if bf16 else "float32", **fields)


__all__ = ["RunContext", "PRECISIONS", "DEFAULT_CONTEXT", "device_context"]
