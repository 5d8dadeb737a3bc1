"""Benchmark: what each fault costs a study -- runs lost, runs redone, time to recover -- written to docs/reliability.md.

Each scenario runs `qkov reproduce` on the fault-injection stage of the test suite (``tests/faults/faultstudy.py``:
``--runs`` runs of ``--sleep`` seconds each, no science), injects one fault, then reruns the same command and
measures:

- *runs lost*: runs that had started (executed at least once) but were not complete when the fault hit;
- *runs redone*: executions beyond one per run, over the faulty study and the rerun together;
- *time to recover*: wall time of the rerun after the fault was removed (0 where the study recovers by
  itself), next to the time of a fault-free study of the same runs;
- *time to error*: for faults that must be refused, how long until the one-line error.

Faults that need root (disk full on a tmpfs, read-only bind mount) are skipped with the reason elsewhere.

    sudo python benchmarks/bench_reliability.py [--runs 8] [--sleep 1.0] [--out-md docs/reliability.md]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ROOT / "tests" / "faults"
PATHS = [str(FAULTS), str(ROOT)]
sys.path[:0] = PATHS
os.environ["PYTHONPATH"] = os.pathsep.join(PATHS + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

from faultstudy import executions, set_behaviour  # noqa: E402

DRIVER = """
import sys
sys.path[:0] = {paths!r}
from qkov.study import engine
import faultstudy
STUDY = {{"stages": (engine.Stage.from_module("synthetic", faultstudy),)}}
from qkov.cli.main import main
if __name__ == "__main__":
    main(["reproduce", "--out", sys.argv[1], "--workers", sys.argv[2], "--no-progress", *sys.argv[3:]], obj=STUDY)
"""

PROMISES = [
    ("One owner per results directory: a second `reproduce` (or `report`) on the same `--out` exits 2 at once "
     "with one line naming the holder (PID, host, start); nothing of the first study is touched.",
     "test_lock.py::test_second_writer_exits_2_at_once_naming_the_holder"),
    ("A stale lock (its holder SIGKILLed) is taken over with one message; SIGKILL mid-study leaves no run that "
     "reads complete and is not; the rerun redoes only the unfinished runs.",
     "test_lock.py::test_sigkill_mid_study_then_rerun_takes_over_the_stale_lock"),
    ("SIGINT mid-study stops with a message, no traceback, the lock released; the rerun redoes only the "
     "unfinished runs.", "test_lock.py::test_sigint_mid_study_stops_releases_the_lock_and_rerun_finishes"),
    ("Both lock modes (flock; lease file for filesystems without flock) refuse a live holder and take over a "
     "dead one; a lease from another host is never taken over automatically.",
     "test_lock.py::test_lock_modes_refuse_a_live_holder_and_take_over_a_dead_one, "
     "test_lock.py::test_lease_held_from_another_host_is_not_taken_over"),
    ("A wrong `--scheduler` (refused, unresolvable, an HTTP port, a silent port) is one line "
     "`qkov: error: scheduler: ADDR: ...`, exit 2, within seconds (10 s per step at most), nothing written.",
     "test_scheduler.py::test_wrong_scheduler_is_one_line_exit_2_in_seconds_and_writes_nothing"),
    ("Every command parses `--scheduler` the same way, before any planning, data loading or cluster start: a "
     "malformed address (`tcp://[::1:8786`, `not an address`) says `malformed`, a well-formed one where nothing "
     "listens says `connection refused`; one line, exit 2 (before: `validate` printed a 48-line traceback, and "
     "`tcp://[::1:8786` was reported as refused).",
     "test_scheduler.py::test_malformed_and_unreachable_scheduler_told_apart_in_every_command_before_planning"),
    ("A Dask worker's address given as `--scheduler` is told apart from a scheduler.",
     "test_scheduler.py::test_a_dask_worker_address_is_not_a_scheduler"),
    ("A worker killed mid-task under a real `dask scheduler` + `dask worker` is restarted, its run redone; "
     "the study completes; complete runs whose result was lost with the worker are not executed again.",
     "test_dask_worker.py::test_worker_killed_mid_task_under_a_real_scheduler"),
    ("Disk full mid-study: failing runs reported in one line each, none reads complete that is not, the report "
     "built from the complete runs or one line why not, the rerun after the fix completes.",
     "test_resources.py::test_disk_full_mid_study"),
    ("`--out` read-only mid-study: the same, and the summary and report each say in one line they were not "
     "written.", "test_resources.py::test_read_only_out_mid_study"),
    ("`--out` read-only before the start: `reproduce` and `report` each say so in one line (exit 2).",
     "test_resources.py::test_read_only_out_from_the_start_is_one_line"),
    ("`--out` removed mid-study: the workers do not recreate it; runs fail in one line; the rerun completes.",
     "test_resources.py::test_out_vanishes_mid_study"),
    ("A worker out of memory (MemoryError, or killed each time as by the OOM killer): that run fails in one "
     "line, the others complete, the report is built, the rerun runs that run alone.",
     "test_resources.py::test_worker_out_of_memory"),
    ("Tampered results are redone alone; unlisted extra files change nothing and never reach the report.",
     "test_files.py::test_tampered_and_extra_files"),
    ("A run with an extra unlisted file (`.DS_Store`, a broken JSON, a directory) stays complete: reused by "
     "`reproduce`, shown by `report`, the extra file never named.",
     "test_results_faults.py::test_extra_unlisted_file_keeps_the_run_complete_and_unnamed"),
    ("A malformed `COMPLETE` (`{\"files\": {}}`, a list, wrong-typed digests, invalid or deeply nested JSON) "
     "reads incomplete with a one-line reason, in `reproduce` (redone) and `report` (listed) alike.",
     "test_results_faults.py::test_malformed_complete_marker_reads_incomplete_in_one_line, "
     "test_results_faults.py::test_unparseable_complete_marker_reads_incomplete"),
    ("`COMPLETE` entries with `../` or an absolute path (with their true SHA-256) are refused: the run is "
     "incomplete, nothing outside it reaches the report.",
     "test_results_faults.py::test_complete_entries_outside_the_run_are_never_read"),
    ("A run directory linked to outside `--out` is refused by the report in one line (exit 2, nothing read); a "
     "listed file replaced by a link makes its run incomplete.", "test_results_faults.py::test_symlinked_run_directory_is_not_followed_by_the_report, "
     "test_results_faults.py::test_symlinked_listed_file_makes_the_run_incomplete"),
    ("A malformed `reproduce.json` (`[1]`, `{\"stages\": \"abc\"}`, `{\"runs\": [1]}`, `{\"skipped\": 5}`, ...) "
     "is ignored with one line in the report, no traceback.",
     "test_results_faults.py::test_malformed_reproduce_json_is_ignored_with_one_line"),
    ("`.qkov.lock` a symbolic link: refused in one line naming the file to remove; its target is never "
     "written (it is opened with `O_NOFOLLOW`).",
     "test_results_faults.py::test_symlinked_lock_file_is_refused_and_its_target_untouched"),
    ("Lock modes see each other: a flock-mode command refuses a live lease-mode holder (with or without "
     "flock) and vice versa; the mode is recorded in the lock.",
     "test_results_faults.py::test_mixed_lock_modes_see_each_other, "
     "test_results_faults.py::test_live_lease_without_flock_is_respected_by_flock_mode"),
    ("An empty or garbage lock file is taken over with a message (flock mode; lease mode once older than "
     "the grace period), or refused naming the file to remove.",
     "test_results_faults.py::test_empty_or_garbage_lock_is_recovered_or_refused_with_the_fix"),
    ("A lock record that cannot be written (disk full) leaves neither the lock file nor the directories it "
     "made; the command says so in one line.",
     "test_results_faults.py::test_lock_write_failure_leaves_nothing_behind"),
    ("A busy lock is refused at once by the lock API (well under a second).",
     "test_results_faults.py::test_refusal_of_a_busy_lock_is_immediate"),
    ("`qkov data fetch --mirror URL` (or `$QKOV_DATA_MIRROR`) fetches all three data sets from a local "
     "server, pins checked; a bad mirror URL is one line.",
     "test_fetch_faults.py::test_mirror_fetches_all_three_data_sets_from_a_local_server, "
     "test_fetch_faults.py::test_bad_mirror_url_is_one_line"),
    ("A server dripping one byte at a time is cut off by the overall `--deadline` in one line.",
     "test_fetch_faults.py::test_slow_drip_server_is_refused_by_the_overall_deadline"),
    ("Junk served (or already in place) as the unpinned HateXplain `dataset.json` is validated, refused and "
     "discarded, and fetched again instead of kept.",
     "test_fetch_faults.py::test_junk_unpinned_file_is_refused_and_discarded"),
    ("A body over a file's size cap is refused (before the body when `Content-Length` says so) in one line.",
     "test_fetch_faults.py::test_body_over_the_size_cap_is_refused, "
     "test_fetch_faults.py::test_size_cap_via_cli_is_one_line"),
    ("A `.part` or destination that is a symbolic link is refused; its target is never written or appended to.",
     "test_fetch_faults.py::test_symlinked_part_file_is_refused_and_its_target_untouched"),
    ("`data fetch` into a place under a file, onto a directory, or into an unwritable / read-only / full "
     "directory: one line, exit 2.",
     "test_fetch_faults.py::test_data_dir_under_a_file_is_one_line, "
     "test_fetch_faults.py::test_destination_that_is_a_directory_is_one_line, "
     "test_fetch_faults.py::test_unwritable_data_dir_is_one_line"),
    ("Data files nested 200,000 brackets deep, or holding a 5,000-digit integer, are one line naming the "
     "file (and line) in the loaders and `data check`.",
     "test_data_faults.py::test_deeply_nested_json_is_one_line, "
     "test_data_faults.py::test_integer_past_the_digit_limit_is_one_line, "
     "test_data_faults.py::test_large_answer_start_within_the_digit_limit_is_one_short_line, "
     "test_data_faults.py::test_data_check_on_deeply_nested_file_is_one_line"),
    ("Wrong-typed HateXplain rationales (`[5]`, `[null]`, ...) and non-string division ids (a list, ...) are "
     "one line naming the file and the record.",
     "test_data_faults.py::test_wrong_rationale_types_are_one_line, "
     "test_data_faults.py::test_unhashable_or_non_string_division_id_is_one_line"),
    ("`data check` names a directory standing in for a JSONL split as such (not as a missing dataset.json).",
     "test_data_faults.py::test_directory_in_place_of_a_jsonl_split_is_named_as_such"),
    ("A newline or control character inside a value is shown quoted: the error stays one line.",
     "test_data_faults.py::test_newline_in_a_value_stays_one_line"),
    ("A symbolic link as a run directory is refused before any work with one line; nothing behind it is deleted.",
     "test_files.py::test_symlinked_run_directory_is_refused_with_one_line"),
    ("Files 0666 & ~umask, directories 0777 & ~umask (0644/0755 under umask 022); the local cluster starts no "
     "dashboard (no 'Port 8787 is already in use').",
     "test_files.py::test_modes_follow_the_umask_and_the_local_cluster_serves_no_dashboard"),
    # issue 35: one guarded results store, well-formed or ignored, bounded inputs, the API, a faster refusal
    ("`OUT/runs` as a symbolic link is refused in one line (exit 2) by `reproduce`, `derive`, `simulate --save`, "
     "`validate synthetic`, `validate real` and `report`; the link's target is byte for byte unchanged (before: "
     "`reproduce` ran rmtree inside it, `derive` and `simulate --save` wrote through it).",
     "test_store_faults.py::test_symlinked_runs_folder_is_refused_by_every_command"),
    ("A run directory as a symbolic link is refused in one line by every writing command and the report; its "
     "target is unchanged (before: `derive`, `simulate --save`, `validate synthetic` overwrote COMPLETE and "
     "config.json in it).",
     "test_store_faults.py::test_symlinked_run_directory_is_refused_by_every_command"),
    ("The run store itself (`RunWriter`, what every stage writes through) checks `OUT`, `OUT/runs` and the run "
     "with `lstat` and refuses a link at any level before writing a byte.",
     "test_store_faults.py::test_run_writer_refuses_a_link_at_every_level"),
    ("Deletion only of what the store made and can prove (its `.qkov-run` marker), never through a link.",
     "test_store_faults.py::test_deletion_only_of_a_marked_run_never_through_a_link"),
    ("A dataset folder of `--data-dir` that is a symbolic link (`DATA/sva`) is refused by `data fetch` in one "
     "line before any download (before: `wiki-*.txt` was written into the link's target).",
     "test_store_faults.py::test_linked_dataset_folder_is_refused_by_data_fetch"),
    ("A fetch that fails on a full disk leaves no empty dataset folders behind (a kept `.part` keeps its own).",
     "test_store_faults.py::test_full_disk_during_fetch_leaves_no_empty_folders"),
    ("A well-hashed but wrong-shaped file (`derivation.json` = `{\"ledger\": 7}` with its true SHA-256) and a "
     "metric of 10**400 make their runs incomplete: `report` exits 0 naming them in one line, `reproduce` "
     "names them (`redoing <run>: <why>`) and redoes them alone (before: TypeError / OverflowError tracebacks).",
     "test_store_faults.py::test_well_hashed_wrong_shaped_derivation_and_huge_metric_leave_report_and_reproduce_"
     "at_exit_0"),
    ("Numbers outside the float range are bad values, not crashes, in the tables and provenance.",
     "test_store_faults.py::test_metric_beyond_float_range_is_a_bad_value_not_a_crash"),
    ("A corrupt or foreign `$QKOV_CACHE_DIR` entry (wrong shape, deeply nested, not JSON, another format, "
     "something that is not a derivation of the asked parametrization) is recomputed, as documented (before: "
     "KeyError / TypeError / RecursionError).",
     "test_store_faults.py::test_corrupt_derivation_cache_entry_is_recomputed, "
     "test_store_faults.py::test_corrupt_or_foreign_derivation_entry_is_recomputed"),
    ("Nothing is ever unpickled: a pickle that would create a file when loaded (shown to, by its own test), "
     "planted at the derivation cache's path (and the old `.pickle` name), the derive payload cache, the "
     "Figure 2 segment checkpoint `$QKOV_CACHE_DIR/figure2/<key>.pt` and a training state "
     "`OUT/resume/<run>.pt`, is a miss each time and never runs (before: the derivation cache and the Figure 2 "
     "checkpoint unpickled what they found).",
     "test_planted_payloads.py::test_the_payload_runs_when_unpickled, "
     "test_planted_payloads.py::test_derivation_cache_never_runs_a_planted_entry, "
     "test_planted_payloads.py::test_figure2_checkpoint_never_runs_a_planted_file, "
     "test_planted_payloads.py::test_resume_state_never_runs_a_planted_file"),
    ("The Python API is as guarded as the CLI: `reproduce(\"quick\", \"\")`, `workers=True`, `None` or "
     "`object()` as a stage, ... raise a ConfigError naming the field, and nothing is written.",
     "test_store_faults.py::test_reproduce_api_bad_argument_raises_config_error_and_writes_nothing"),
    ("A 300-character path component in `--out` or `--data-dir` is one line naming the limit, exit 2, in every "
     "command (before: ENAMETOOLONG tracebacks in 10 commands).",
     "test_store_faults.py::test_overlong_path_component_is_one_line_in_every_command"),
    ("A newline or control character in `--out` or in a lock holder's record is shown escaped: one line.",
     "test_store_faults.py::test_control_characters_in_out_and_in_a_lock_record_stay_one_line"),
    ("More than 1,000 values in `--t`, `--ratios` and the other list options: refused in one short line stating "
     "the limit (before: one line of 4-109 KB).",
     "test_store_faults.py::test_over_long_value_list_is_refused_with_a_short_message_stating_the_limit"),
    ("A full disk during `simulate --save` is one line naming the file and the fix (exit 1); the partial run "
     "stays incomplete (before: a 39-line traceback).",
     "test_store_faults.py::test_full_disk_during_simulate_save_is_one_line_and_no_incomplete_run_is_left"),
    ("`QKOV_DEVICE=garbage` and `--data-dir \"\"` are refused in one line before any cluster starts (before: "
     "24 failed runs in 25 lines; the real stage silently skipped).",
     "test_store_faults.py::test_bad_device_and_empty_data_dir_are_refused_before_any_cluster_starts"),
    ("A second writer on a busy `--out` is refused before the command's imports (pydantic, numpy, the study): "
     "one line, exit 2; its time is measured below.",
     "test_store_faults.py::test_busy_out_is_refused_before_the_commands_imports"),
]


class Study:
    """One results directory on the fault stage, driven by subprocesses of `qkov reproduce`."""

    def __init__(self, base: Path, name: str, runs: int, workers: int):
        self.dir = base / name
        self.scratch = self.dir / "scratch"
        self.scratch.mkdir(parents=True)
        self.out = self.dir / "out"
        self.runs, self.workers = runs, workers
        self.script = self.dir / "driver.py"
        self.script.write_text(DRIVER.format(paths=PATHS))
        self.env = dict(os.environ, QKOV_FAULT_DIR=str(self.scratch), QKOV_FAULT_RUNS=str(runs))

    def start(self, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, str(self.script), str(self.out), str(self.workers), *extra],
                                cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    def run(self, *extra: str) -> tuple[int, str, str, float]:
        t0 = time.perf_counter()
        p = self.start(*extra)
        out, err = p.communicate(timeout=600)
        return p.returncode, out, err, time.perf_counter() - t0

    def complete(self) -> set[str]:
        from qkov.core.runstore import is_complete

        runs = self.out / "runs"
        return {p.name for p in runs.iterdir() if is_complete(p)} if runs.is_dir() else set()

    def started(self) -> set[str]:
        counts = self.scratch / "counts"
        return {p.name for p in counts.iterdir()} if counts.is_dir() else set()

    def executions(self) -> int:
        return sum(executions(self.scratch, n) for n in self.started())

    def wait_complete(self, proc: subprocess.Popen, n: int) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and len(self.complete()) < n:
            time.sleep(0.05)

    def figures(self, lost: set[str], recover_s: float, note: str = "") -> dict:
        return {"runs": self.runs, "lost": len(lost), "redone": self.executions() - self.runs,
                "complete_after": len(self.complete()), "recover_s": round(recover_s, 1), "note": note}


def killpg(p: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, sig)


def scenario_baseline(base, a):
    s = Study(base, "baseline", a.runs, a.workers)
    set_behaviour(s.scratch, sleep=a.sleep)
    rc, _, err, t = s.run()
    assert rc == 0, err
    return s.figures(set(), 0.0, f"fault-free study: {t:.1f} s")


def _interrupt(base, a, name, sig):
    s = Study(base, name, a.runs, a.workers)
    set_behaviour(s.scratch, sleep=a.sleep)
    p = s.start()
    s.wait_complete(p, a.runs // 3)
    killpg(p, sig) if sig == signal.SIGKILL else p.send_signal(sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.communicate(timeout=60)
    killpg(p, signal.SIGKILL)
    lost = s.started() - s.complete()
    rc, _, err, t = s.run()
    assert rc == 0, err
    took_over = "took over the stale lock" if "taking over the lock" in err else "lock was free"
    return s.figures(lost, t, f"rerun: {took_over}")


def scenario_sigkill(base, a):
    return _interrupt(base, a, "sigkill", signal.SIGKILL)


def scenario_sigint(base, a):
    return _interrupt(base, a, "sigint", signal.SIGINT)


def scenario_worker_killed(base, a):
    s = Study(base, "worker-killed", a.runs, a.workers)
    set_behaviour(s.scratch, sleep=a.sleep, die_once=[1])
    rc, _, err, t = s.run()
    assert rc == 0, err
    return s.figures({"1"}, 0.0, f"recovers by itself (nanny restart, retry): study {t:.1f} s")


def scenario_oom(base, a):
    s = Study(base, "oom-killed", a.runs, a.workers)
    set_behaviour(s.scratch, sleep=a.sleep, die=[1])
    rc, _, err, t1 = s.run()
    failed = [x for x in err.splitlines() if x.startswith("failed ")]
    set_behaviour(s.scratch, sleep=a.sleep)
    rc2, _, err2, t = s.run()
    assert rc2 == 0, err2
    return s.figures({"1"}, t, f"faulty study {t1:.1f} s, exit {rc}, {len(failed)} failed line(s)")


def _mount(path: Path, *args: str) -> str | None:
    r = subprocess.run(["mount", *args, str(path)], capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")


def scenario_disk_full(base, a):
    s = Study(base, "disk-full", a.runs, a.workers)
    fs = s.dir / "fs"
    fs.mkdir()
    why = _mount(fs, "-t", "tmpfs", "-o", "size=8m", "qkov-bench")
    if why:
        return {"skipped": f"cannot mount a tmpfs ({why})"}
    try:
        s.out = fs / "out"
        set_behaviour(s.scratch, sleep=a.sleep, payload=100_000)
        p = s.start()
        s.wait_complete(p, a.runs // 3)
        filler = fs / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        for block in (1 << 16, 512):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * block)
        os.close(fd)
        _, err = p.communicate(timeout=300)
        lost = s.started() - s.complete()
        report = "report: one line why not" if "report: not written" in err else "report built"
        failed = len([x for x in err.splitlines() if x.startswith("failed ")])
        filler.unlink()
        rc2, _, err2, t = s.run()
        assert rc2 == 0, err2
        return s.figures(lost, t, f"filled once {a.runs // 3} runs were done: exit {p.returncode}, "
                                  f"{failed} failed line(s), {report}")
    finally:
        subprocess.run(["umount", "-l", str(fs)], capture_output=True)


def scenario_read_only(base, a):
    s = Study(base, "read-only", a.runs, a.workers)
    set_behaviour(s.scratch, sleep=a.sleep)
    p = s.start()
    s.wait_complete(p, a.runs // 3)
    s.out.mkdir(exist_ok=True)
    why = _mount(s.out, "--bind", str(s.out)) or _mount(s.out, "-o", "remount,bind,ro")
    if why:
        killpg(p, signal.SIGKILL)
        return {"skipped": f"cannot bind-mount --out read-only ({why})"}
    p.communicate(timeout=300)
    lost = s.started() - s.complete()
    subprocess.run(["umount", str(s.out)], capture_output=True)
    rc, _, err, t = s.run()
    assert rc == 0, err
    return s.figures(lost, t, f"faulty study exit {p.returncode}")


def scenario_concurrent(base, a):
    s = Study(base, "concurrent", a.runs, a.workers)
    set_behaviour(s.scratch, sleep=a.sleep)
    p = s.start()
    s.wait_complete(p, 1)
    rc, _, err, t = s.run()
    p.communicate(timeout=300)
    assert rc == 2 and p.returncode == 0, err
    return s.figures(set(), 0.0, f"second writer refused (exit 2) in {t:.1f} s (process start included)")


def scenario_scheduler(base, a):
    s = Study(base, "scheduler", 1, 1)
    res = {}
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    refused = free.getsockname()[1]
    free.close()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    conns = []
    threading.Thread(target=lambda: conns.append(silent.accept()), daemon=True).start()
    for name, addr in (("refused", f"tcp://127.0.0.1:{refused}"), ("unresolvable", "tcp://qkov-no-such-host.invalid:8786"),
                       ("silent port", f"tcp://127.0.0.1:{silent.getsockname()[1]}")):
        rc, _, err, t = s.run("--scheduler", addr)
        res[name] = {"exit": rc, "seconds": round(t, 1), "lines": len([x for x in err.splitlines() if x.strip()])}
    silent.close()
    return res


def _burn(seconds: float) -> None:  # a CPU-bound process standing in for a study's busy worker
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def refusal_times(a, repeats: int = 5) -> dict[str, dict]:
    """Seconds for a fresh `qkov reproduce --quick --out BUSY` to be refused while another process holds BUSY's
    lock: idle, and with one CPU-burning process per core (as when the first study's workers fill every core).
    Median and range over ``repeats`` runs, process start included."""
    import multiprocessing as mp
    import statistics

    from qkov.core.lock import results_lock

    base = Path(tempfile.mkdtemp(prefix="qkov-bench-refusal-"))
    cmd = [sys.executable, "-m", "qkov", "reproduce", "--quick", "--out", str(base / "busy")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    res: dict[str, dict] = {}
    try:
        with results_lock(base / "busy", "qkov reproduce"):
            for label, burners in (("no study running", 0),
                                   (f"{os.cpu_count()} CPU-bound processes (a study on every core)", os.cpu_count() or 1)):
                procs = [mp.Process(target=_burn, args=(60.0,), daemon=True) for _ in range(burners)]
                for p in procs:
                    p.start()
                time.sleep(1.0 if procs else 0.0)
                times, codes = [], set()
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
                    times.append(time.perf_counter() - t0)
                    codes.add(done.returncode)
                load = os.getloadavg()[0]
                for p in procs:
                    p.terminate()
                res[label] = {"median": round(statistics.median(times), 2), "min": round(min(times), 2),
                              "max": round(max(times), 2), "exit": sorted(codes), "load": round(load, 1)}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return res


def render_refusal(res: dict[str, dict]) -> list[str]:
    """The measured-figures table of :func:`refusal_times`."""
    lines = ["### Time to refuse a second writer", "",
             f"A fresh `qkov reproduce --quick --out BUSY` while another process holds BUSY's lock "
             f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs shared with other sessions, process start "
             "included; 5 runs each). The lock is probed before the command's imports "
             "(`qkov.core.lock.busy_message`); before issue 35 the refusal came after them: 1.2-1.5 s against an "
             "idle holder and 3.4 s (load 5) to 8.1 s (load 15) while a study filled both cores, as the issue "
             "measured. The code just before the probe, measured the same way on the same machine (2026-12-04, "
             "load average 13-15 from other sessions, medians of 5): 0.90 s with no study running and 3.07 s "
             "(2.44-4.12) with 2 CPU-bound processes, against 0.33 s and 1.17 s (1.09-1.22) with the probe.", "",
             "| machine | exit | median (s) | min-max (s) | load average |", "|---|---|---|---|---|"]
    lines += [f"| {k} | {', '.join(map(str, v['exit']))} | {v['median']} | {v['min']}-{v['max']} | {v['load']} |"
              for k, v in res.items()]
    return lines + [""]


def _splice_refusal(path: Path, table: list[str]) -> str:
    """The document at ``path`` with its refusal-time table replaced (or added at the end of the measured figures)."""
    text = path.read_text()
    head = "### Time to refuse a second writer"
    end = text.find("## What is assumed")
    start = text.find(head)
    start = start if 0 <= start < end else end
    return text[:start] + "\n".join(table) + "\n" + text[end:]


EDGE_CASES = [
    ("validate synthetic --scheduler 'not an address'", ["validate", "synthetic", "--scheduler", "not an address"]),
    ("validate synthetic --scheduler tcp://[::1:8786", ["validate", "synthetic", "--scheduler", "tcp://[::1:8786"]),
    ("validate real --rates qk=1e300", ["validate", "real", "--dataset", "sva", "--quick", "--rates", "qk=1e300"]),
    ("validate real, a link at OUT/resume", ["validate", "real", "--dataset", "sva", "--quick", "--out", "{link}"]),
    ("validate synthetic --optimizer gd --levels 0.3", ["validate", "synthetic", "--optimizer", "gd", "--levels",
                                                        "0.3"]),
    ("validate real --fused-adamw --optimizer sgd", ["validate", "real", "--dataset", "sva", "--quick",
                                                     "--fused-adamw", "--optimizer", "sgd"]),
    ("reproduce --scheduler tcp://[::1:8786", ["reproduce", "--scheduler", "tcp://[::1:8786"]),
]
"""The refusals issue 44 found late or missing, timed by :func:`edge_refusal_costs`."""


def edge_refusal_costs(code: Path, timeout: float = 600.0) -> dict[str, dict]:
    """Per case of :data:`EDGE_CASES`: exit status, stderr lines, CPU seconds (user + system of the child) and
    wall seconds of a fresh ``python -m qkov`` process running the code at ``code`` (this checkout, or an older
    one for the figures before)."""
    import resource

    base = Path(tempfile.mkdtemp(prefix="qkov-bench-edge-"))
    (base / "link" / "elsewhere").mkdir(parents=True)
    os.symlink(base / "link" / "elsewhere", base / "link" / "resume")
    env = dict(os.environ, PYTHONPATH=str(code))
    res: dict[str, dict] = {}
    try:
        for label, args in EDGE_CASES:
            args = [x.replace("{link}", str(base / "link")) for x in args]
            if "--out" not in args:
                args += ["--out", str(base / "out")]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            try:
                done = subprocess.run([sys.executable, "-m", "qkov", *args], cwd=base, env=env, capture_output=True,
                                      text=True, timeout=timeout)
                code_, lines = done.returncode, len(done.stderr.strip().splitlines())
            except subprocess.TimeoutExpired:
                code_, lines = "timeout", 0
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            res[label] = {"exit": code_, "lines": lines, "cpu": round(cpu, 2), "wall": round(wall, 1)}
            shutil.rmtree(base / "out", ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return res


def render_edge(after: dict[str, dict], before: dict[str, dict] | None, before_label: str) -> list[str]:
    """The measured-figures table of :func:`edge_refusal_costs`, with the figures before the fix when measured."""
    lines = ["### Cost of a refusal at the edge", "",
             f"A fresh `python -m qkov` process per case ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, load "
             f"average {os.getloadavg()[0]:.1f} from other sessions; process start included; with "
             "`QKOV_DATA_DIR` as set for the run). CPU is the child's user + system time, the figure a loaded "
             "machine multiplies into wall time. Issue 44: the checks now come before torch, Dask and the study "
             "engine are imported, and before planning or data loading."
             + (f" *Before*: the same cases on {before_label}, measured in the same process right before." if before
                else ""), ""]
    if before:
        lines += ["| case | exit | lines | CPU (s) | wall (s) | before: exit | lines | CPU (s) | wall (s) |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {k} | {v['exit']} | {v['lines']} | {v['cpu']} | {v['wall']} | {before[k]['exit']} | "
                  f"{before[k]['lines']} | {before[k]['cpu']} | {before[k]['wall']} |" for k, v in after.items()]
    else:
        lines += ["| case | exit | lines | CPU (s) | wall (s) |", "|---|---|---|---|---|"]
        lines += [f"| {k} | {v['exit']} | {v['lines']} | {v['cpu']} | {v['wall']} |" for k, v in after.items()]
    return lines + [""]


def _splice_edge(path: Path, table: list[str]) -> str:
    """The document at ``path`` with its edge-refusal table replaced, or put before the second-writer table (or the
    end of the measured figures)."""
    text = path.read_text()
    head, nxt = "### Cost of a refusal at the edge", "### Time to refuse a second writer"
    end = text.find("## What is assumed")
    stop = text.find(nxt) if 0 <= text.find(nxt) < end else end
    start = text.find(head)
    start = start if 0 <= start < stop else stop
    return text[:start] + "\n".join(table) + "\n" + text[stop:]


SCENARIOS = {
    "fault-free study": scenario_baseline,
    "SIGKILL of the study (driver + workers) mid-study": scenario_sigkill,
    "SIGINT mid-study": scenario_sigint,
    "worker killed mid-task once": scenario_worker_killed,
    "worker killed every time (OOM killer), then fixed": scenario_oom,
    "disk full mid-study (8 MiB tmpfs filled), then freed": scenario_disk_full,
    "`--out` read-only mid-study, then writable": scenario_read_only,
    "second writer on the same `--out`": scenario_concurrent,
}


def faults_tried(a) -> dict[str, dict]:
    """Run every test the promise table cites (one pytest process); per test: cases tried, held, seconds."""
    import xml.etree.ElementTree as ET

    cited = sorted({t.strip() for _, ts in PROMISES for t in ts.split(",")})
    cited = [t for t in cited if not any(k in t for k in a.faults_skip)]
    xml = Path(tempfile.mkdtemp(prefix="qkov-bench-faults-")) / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
           *[f"tests/faults/{t}" for t in cited]]
    subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=3600)
    out: dict[str, dict] = {t: {"tried": 0, "held": 0, "skipped": 0, "seconds": 0.0} for t in cited}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}.py::{case.get('name', '').split('[')[0]}"
        if name not in out:
            continue
        f = out[name]
        f["seconds"] += float(case.get("time", 0))
        if case.find("skipped") is not None:
            f["skipped"] += 1
            continue
        f["tried"] += 1
        f["held"] += int(case.find("failure") is None and case.find("error") is None)
    shutil.rmtree(xml.parent, ignore_errors=True)
    return out


def _splice_measured(path: Path) -> str:
    """The measured-figures section of an existing document (kept when only the fault table is rerun)."""
    text = path.read_text() if path.is_file() else ""
    start, end = text.find("## Measured figures"), text.find("## What is assumed")
    return text[start:end].rstrip() + "\n" if start >= 0 and end > start else ""


def render(figures: dict, sched: dict, a, tried: dict | None = None, measured: str | None = None) -> str:
    lines = ["# Reliability: the promises under faults, their tests, measured figures", "",
             "Generated by `python benchmarks/bench_reliability.py` (run as root for the filesystem faults); "
             "do not edit by hand.", "",
             "The fault-injection suite is `tests/faults` (marker `faults`): `pytest -m faults` runs it alone; it "
             "also runs in the default suite. Cases that need root (a tmpfs, a read-only bind mount) are skipped "
             "elsewhere with the reason printed; run them with `sudo -E pytest -m faults -rs`.", "",
             "## Promises and the tests that check them", "", "| promise | test (tests/faults/) |", "|---|---|"]
    lines += [f"| {p} | `{t}` |" for p, t in PROMISES]
    if tried:
        n_tried = sum(f["tried"] for f in tried.values())
        n_held = sum(f["held"] for f in tried.values())
        lines += ["", "## Faults tried and held", "",
                  f"Every test above run once ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs): "
                  f"{n_held} of {n_tried} fault cases held. A test's cases are its parametrized variants."
                  + (f" Not rerun this time (slow, see the measured figures): tests matching "
                     f"{', '.join(a.faults_skip)}." if a.faults_skip else ""), "",
                  "| test (tests/faults/) | cases tried | held | skipped | seconds |", "|---|---|---|---|---|"]
        lines += [f"| `{t}` | {f['tried']} | {f['held']} | {f['skipped']} | {f['seconds']:.1f} |"
                  for t, f in tried.items()]
    if measured is not None:
        lines += ["", *measured.rstrip("\n").split("\n"), ""]
        return "\n".join(lines + _assumed())
    lines += ["", "## Measured figures", "",
              f"A study of {a.runs} runs of {a.sleep:g} s each on {a.workers} local worker processes "
              f"({os.cpu_count()} CPUs, load average {a.load:.1f} at the start, {time.strftime('%Y-%m-%d')}); the "
              "times are dominated by starting Python, Dask and the local cluster. *Lost*: runs started but not complete when "
              "the fault hit. *Redone*: executions beyond one per run, fault and rerun together. *Recover*: wall "
              "time of the rerun after the fault was removed (process start and local cluster included).", "",
              "| fault | lost | redone | complete after rerun | recover (s) | note |", "|---|---|---|---|---|---|"]
    for name, f in figures.items():
        if "skipped" in f:
            lines.append(f"| {name} | | | | | skipped: {f['skipped']} |")
        else:
            lines.append(f"| {name} | {f['lost']} | {f['redone']} | {f['complete_after']}/{f['runs']} | "
                         f"{f['recover_s']} | {f['note']} |")
    lines += ["", "Time to a one-line error for a wrong `--scheduler` (a fresh `qkov reproduce` process, imports "
              "included; the silent port waits out the 10 s handshake timeout):", "",
              "| scheduler | exit | seconds | stderr lines |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['exit']} | {v['seconds']} | {v['lines']} |" for k, v in sched.items()]
    return "\n".join(lines + _assumed())


def _assumed() -> list[str]:
    return ["", "## What is assumed", "",
              "- **Lock**: `<out>/.qkov.lock`, held by the process running `qkov reproduce`, `report`, "
              "`derive`, `simulate --plot` or `validate` (workers write under it); never opened through a "
              "symbolic link. One protocol whatever `QKOV_LOCK` says: the holder takes `flock` on the file "
              "wherever the filesystem has it and records host, PID, start time and its mode; a taker in either "
              "mode is refused by a held flock and by a record whose holder is alive, so the modes see each "
              "other. The kernel drops a flock when the holder dies, so a file whose flock is free and whose "
              "holder is gone (or which is empty or garbage) is taken over with a message. On a shared "
              "filesystem flock must be coherent across hosts (local disk, NFSv4 or NFSv3 with lockd, Lustre "
              "`-o flock`, GPFS, CephFS). On NFS mounted `nolock` or `local_lock=flock`, set `QKOV_LOCK=lease`: "
              "the `O_EXCL` file is the lease, taken over only when its holder is on this host and gone, or when "
              "it has been empty or garbage for longer than a grace period (10 s); a lease from another host is "
              "removed by hand once that host's qkov is known to be gone (the error names the file). "
              "Filesystems without flock fall back to the lease by themselves (ENOLCK/EOPNOTSUPP).",
              "- **A complete run** (one definition, `qkov.core.runstore.completeness`, used by `reproduce` and "
              "`report`): a real directory whose `COMPLETE` lists plain file names inside it, each a regular "
              "file whose SHA-256 matches. Files it does not list are ignored: never read, never shown, and the "
              "run stays complete. Every listed JSON file must also have its shape (`qkov.core.schema`: objects "
              "where objects are read, the derivation's sections of their types, numbers inside the float "
              "range), so a well-hashed bad file is a bad run, not a crash. Anything malformed reads incomplete, "
              "with a one-line reason, and is redone.",
              "- **The results store** (`qkov.core.runstore`): `OUT`, `OUT/runs`, `OUT/resume` and each run "
              "directory are checked with `lstat` (never followed) by every command while `--out` is parsed, "
              "before it plans or computes (`check_results_tree`: a link, or a file where a directory goes, is "
              "refused), and again by `RunWriter` before it writes; a link at any level is refused "
              "in one line. `--out` itself may not be a link (give the directory it points to). Each run "
              "directory the store makes holds a `.qkov-run` marker; `remove_run` deletes only a real directory "
              "holding it. Paths are bounded (255 bytes a component, 4095 in all) and list options to 1,000 "
              "values; control characters in error lines are shown escaped.",
              "- **Nothing is unpickled** (issue 44; `tests/unit/test_no_unpickling.py` walks the four packages' "
              "syntax trees for any unpickling call): the derivation cache is JSON (`theory.safe_codec`: sympy "
              "expressions as `srepr` text rebuilt node by node from `ast`, never `eval`; only sympy classes, "
              "identifiers as names, theory's own dataclasses), written only when it reads back equal; the "
              "Figure 2 segment checkpoint and the real-data training state are tensors and plain values read "
              "with `torch.load(weights_only=True)` and checked against the run before use. A writable cache "
              "directory can still make a run recompute, never run code; it is not signed, so one who can write "
              "there can plant a wrong but well-formed derivation.",
              "- **Training state** (`validation.real.resume`): a state that cannot be read, is another run's, or "
              "does not fit the run (required keys, epoch within the configured epochs, the model's, optimizer's "
              "and best weights' shapes, generator and RNG sizes, the history's length: `state_problem`) is moved "
              "to `OUT/resume/<run>.pt.rejected` with one warning line naming it and why, and the run trains from "
              "the beginning: a rerun is never caught by the same bad file (`tests/integration/real/"
              "test_resume.py`). A state link is moved aside as the link. Temporaries of a killed write "
              "(`.<run>.pt.*.tmp`) are removed when the run starts again.",
              "- **Options at the edge** (`tests/integration/test_edge_checks.py`): every option is checked while "
              "it is parsed or right after, before planning, data loading or a cluster start and before torch, "
              "Dask or the study engine are imported: `--scheduler` by one parser (`qkov.study.connect."
              "parse_address`), `--rates` factors and real-data ratios within `[1e-6, 1e6]` like `--ratios`, an "
              "option that does not apply to the chosen optimizer refused (`validation.synthetic.optimizers."
              "APPLIES`; `--fused-adamw` with no AdamW run). Its cost is measured above.",
              "- **Data fetch**: an overall deadline (`--deadline`, default 3600 s) besides the 30 s per read, a "
              "size cap per file, unpinned files validated (structure and counts) before they are kept, and "
              "`--mirror URL` / `$QKOV_DATA_MIRROR` serving `<mirror>/<path in the data directory>`.",
              "- **Workers** write the run directories and must see `--out` at the same path; a worker that does "
              "not (not mounted, removed) fails its run in one line instead of creating a private copy.",
              "- **After SIGINT or SIGKILL of the client on a shared `--scheduler`** the scheduler's workers may "
              "still finish the runs they had started; those runs end complete or are redone. Rerun after the "
              "old client is gone (the lock enforces this for the client, not for its in-flight tasks).",
              "- **Permissions**: files are created 0666 & ~umask and directories 0777 & ~umask; use umask 022 "
              "(or 002 for a group) on shared results.",
              "- **Local cluster**: binds to 127.0.0.1; Dask always opens an HTTP port, here an ephemeral "
              "loopback one with no routes (no dashboard, no metrics), so nothing contends for port 8787.", ""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--sleep", type=float, default=1.0, help="seconds per run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out-md", default=str(ROOT / "docs" / "reliability.md"))
    ap.add_argument("--only", default=None, help="comma-separated scenario numbers (1-based) to run")
    ap.add_argument("--faults-only", action="store_true",
                    help="rerun only the fault tests (table 'Faults tried and held'); keep the measured figures "
                         "of the existing document")
    ap.add_argument("--faults-skip", default="", help="comma-separated substrings of fault tests not to run")
    ap.add_argument("--refusal-only", action="store_true",
                    help="measure only the time to refuse a second writer and splice its table into the document")
    ap.add_argument("--edge-only", action="store_true",
                    help="measure only the cost of the edge refusals (issue 44) and splice its table into the document")
    ap.add_argument("--edge-before", default=None,
                    help="a checkout of the code before issue 44 to time the same refusals on (the 'before' columns)")
    a = ap.parse_args()
    a.faults_skip = [x for x in a.faults_skip.split(",") if x]
    a.load = os.getloadavg()[0]
    if a.edge_only:
        before = edge_refusal_costs(Path(a.edge_before)) if a.edge_before else None
        after = edge_refusal_costs(ROOT)
        print(json.dumps({"after": after, "before": before}, indent=1))
        label = f"`{a.edge_before}` (commit {_commit(Path(a.edge_before))})" if a.edge_before else ""
        Path(a.out_md).write_text(_splice_edge(Path(a.out_md), render_edge(after, before, label)))
        print(f"written: {a.out_md}")
        return
    if a.refusal_only:
        res = refusal_times(a)
        print(json.dumps(res, indent=1))
        Path(a.out_md).write_text(_splice_refusal(Path(a.out_md), render_refusal(res)))
        print(f"written: {a.out_md}")
        return
    if a.faults_only:
        tried = faults_tried(a)
        Path(a.out_md).write_text(render({}, {}, a, tried, _splice_measured(Path(a.out_md))))
        print(json.dumps(tried, indent=1))
        print(f"written: {a.out_md}")
        return
    base = Path(tempfile.mkdtemp(prefix="qkov-bench-reliability-"))
    figures = {}
    try:
        for i, (name, fn) in enumerate(SCENARIOS.items(), 1):
            if a.only and str(i) not in a.only.split(","):
                continue
            t0 = time.perf_counter()
            try:
                figures[name] = fn(base, a)
            except Exception as exc:  # noqa: BLE001 - a benchmark reports what it could not measure
                figures[name] = {"skipped": f"{type(exc).__name__}: {str(exc)[:120]}"}
            print(f"{name}: {json.dumps(figures[name])} ({time.perf_counter() - t0:.1f} s)", flush=True)
        sched = scenario_scheduler(base, a)
        print(f"scheduler: {json.dumps(sched)}", flush=True)
        refusal = refusal_times(a)
        print(f"refusal: {json.dumps(refusal)}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    Path(a.out_md).write_text(render(figures, sched, a, faults_tried(a)))
    Path(a.out_md).write_text(_splice_refusal(Path(a.out_md), render_refusal(refusal)))
    Path(a.out_md).write_text(_splice_edge(Path(a.out_md), render_edge(edge_refusal_costs(ROOT), None, "")))
    print(f"written: {a.out_md}")


def _commit(path: Path) -> str:
    """The short commit of the checkout at ``path`` (``?`` when git cannot say)."""
    done = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    main()
