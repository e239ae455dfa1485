"""Where the many-series work runs (the statistical field's fits and forecasts): ``local``, this
machine's process pool (the default), or ``dask``, a Dask cluster: an existing one at an
address, or one embedded on this machine (a LocalCluster of one single-threaded worker
process per core) when none is given. Both map one function over the same tasks and return
the results in the tasks' order, so the forecasts are the same bits either way.

A Dask worker that dies (its process killed, its machine lost) costs its tasks a retry on
another worker (Dask reschedules them, up to its ``distributed.scheduler.allowed-failures``),
never a missing result; a task that ends every worker it runs on is an :class:`EngineError`.
A task that raises is tried again (:data:`RETRIES`), and one that fails every try stops the
stage with its error. A cluster that cannot be reached, or that has no worker
for :data:`WORKER_WAIT` seconds (at the start or in the middle of a map), is an
:class:`EngineError`: one line naming ``evaluate.engine_address``, never a silent wait.

The same bits are guaranteed on an embedded cluster (its workers are this machine's processes
of this environment). Workers at an address were started elsewhere: at the start of each map
every worker there is asked for the versions that decide the forecasts (:func:`versions`:
this project's, with a digest of its source, numpy's, statsforecast's, Python's), and one
that differs from this process stops the stage with one line naming it. The same versions do
not make the same bits on another CPU or with other native libraries (BLAS, numba's LLVM).

    tasks --map--> local: ProcessPoolExecutor(jobs)        --> results, in order
                   dask:  Client(address | LocalCluster).submit, two batches a
                          worker thread out at a time --> results, in order
"""
from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor

from .errors import SettingError

ENGINES = ("local", "dask")  # where tasks run; the first, the default (evaluate.engine)
LOCAL = ENGINES[0]
RETRIES = 3        # a task's tries after it raised (a worker's death: Dask's allowed-failures)
WORKER_WAIT = 120  # seconds a map waits for a cluster without workers to get one
POLL = 5           # seconds between a map's checks that its cluster has workers while none returns


class EngineError(SettingError):
    """The cluster could not be reached, started or given work (one line: the address, the
    cause and what to set)."""


def _local(jobs: int) -> ProcessPoolExecutor:
    # fork is fast, but unsafe once torch has run in this process (its OpenMP pool)
    ctx = multiprocessing.get_context("spawn" if "torch" in sys.modules else "fork")
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx)


@contextlib.contextmanager
def dask_client(address: str = "", jobs: int = 1) -> Iterator:
    """A Dask client of the cluster at ``address``, or of a LocalCluster of ``jobs``
    single-threaded worker processes started here (and closed at the end)."""
    from distributed import Client, LocalCluster
    cluster = None
    try:
        if address:
            client = Client(address, timeout="10s")
        else:
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
    except (OSError, TimeoutError) as err:
        cause = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0][:160]}"
        if address:
            raise EngineError(f"cannot reach the Dask cluster at <engine_address> {address} "
                              f"({cause}); give a running scheduler's address "
                              "(tcp://host:8786), or '' for a cluster on this machine") from None
        raise EngineError(f"cannot start a Dask cluster on this machine ({cause}); set "
                          "<engine_address> to a running scheduler's address, or use the "
                          "local engine") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def where(kind: str, address: str, ran: bool = True) -> str:
    """Where the statistical models ran, for a stage's last line: '' on ``local`` (the
    default) or when none ran (``ran`` false), else the cluster, so a user sees that the
    setting took."""
    if kind == LOCAL or not ran:
        return ""
    return (f" (the statistical models on the Dask cluster at {address})" if address
            else " (the statistical models on a Dask cluster on this machine)")


class Engine:
    """Where tasks run: ``kind`` local (``jobs`` processes) or dask (the cluster at
    ``address``, or one of ``jobs`` workers embedded here), its client opened on the first
    map and kept for the next (one cluster for a stage's every forecaster) until
    :meth:`close` (or the end of a ``with`` block)."""

    def __init__(self, kind: str = LOCAL, jobs: int = 1, address: str = "") -> None:
        assert kind in ENGINES, kind
        self.kind, self.jobs, self.address = kind, jobs, address
        self._open = contextlib.ExitStack()
        self.client = None

    def map(self, fn: Callable, tasks: list) -> list:
        """``[fn(t) for t in tasks]``, computed where this engine runs, in the tasks' order."""
        if self.kind == "dask":
            if self.client is None:
                self.client = self._open.enter_context(dask_client(self.address, self.jobs))
            return _dask_map(self.client, fn, tasks, self.address)
        if self.jobs > 1 and len(tasks) > 1:
            with _local(min(self.jobs, len(tasks))) as pool:
                return list(pool.map(fn, tasks, chunksize=max(1, len(tasks) // 64)))
        return [fn(t) for t in tasks]

    def close(self) -> None:
        self._open.close()
        self.client = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _dask_map(client, fn: Callable, tasks: list, address: str = "") -> list:
    # batches of several tasks each keep the scheduler's overhead per task small; at most two
    # batches a worker thread are out at a time (the threads counted anew as each batch comes
    # back: a cluster that grows is used), the next sent as one comes back, so this process
    # never holds the whole map's arguments serialized at once (one graph of every series'
    # values), nor the cluster every result before they are unpacked; pure=False: a task is
    # run even where another of the same arguments ran (no dedup)
    from distributed import wait
    if not tasks:
        return []
    _a_worker(client, "has no worker yet", address)
    if address:                     # workers started elsewhere: the same versions as here?
        same_versions(client.run(PROBE), PROBE(), address)
    size = max(1, len(tasks) // (64 * _threads(client)))
    chunks = iter(enumerate(tasks[i:i + size] for i in range(0, len(tasks), size)))
    parts: dict[int, list] = {}
    out: dict[str, tuple[int, object]] = {}     # key -> (batch, future), while out

    def top_up() -> None:
        for i, chunk in itertools.islice(chunks, max(0, 2 * _threads(client) - len(out))):
            future = client.submit(_chunk, (fn, chunk), pure=False, retries=RETRIES)
            out[future.key] = (i, future)

    try:
        top_up()
        while out:
            try:
                done = wait([f for _, f in out.values()], timeout=POLL,
                            return_when="FIRST_COMPLETED").done
            except TimeoutError:     # nothing came back for a while: has it workers still?
                _a_worker(client, "lost every worker", address)
                continue
            for future in done:
                parts[out[future.key][0]] = _result(future, address)
                del out[future.key]
                future.release()
            top_up()
    finally:      # a batch that failed stops the map: the others out are cancelled, not left
        if out:
            client.cancel([f for _, f in out.values()])
    return [r for i in range(len(parts)) for r in parts[i]]


def _result(future, address: str):
    """A batch's results; its task's own error once its retries are spent, as it was raised.
    A batch whose every try ended the worker it ran on (Dask's KilledWorker: a worker's
    memory limit, a crash in native code) is an :class:`EngineError`, one line."""
    from distributed import KilledWorker
    try:
        return future.result()
    except KilledWorker as err:
        at = f"at <engine_address> {address}" if address else "this stage started"
        last = getattr(err.last_worker, "address", err.last_worker)
        raise EngineError(f"a batch of series ended every Dask worker it ran on "
                          f"({type(err).__name__}: {err.allowed_failures + 1} workers, the "
                          f"last {last}) on the "
                          f"cluster {at}: a worker's memory limit or a crash in native code; "
                          "see that worker's log, give the workers more memory, or use the "
                          "local engine") from None


def _a_worker(client, state: str, address: str) -> None:
    """Return once the cluster has a worker. A cluster without one for :data:`WORKER_WAIT`
    seconds (a scheduler whose workers were never started, or every worker gone and none
    back: a worker that cannot import a task's function closes) is an error, not a silent
    wait."""
    if client.nthreads():
        return
    at = address or client.scheduler.address
    print(f"engine: the Dask cluster at {at} {state}; waiting up to {WORKER_WAIT} s for one",
          file=sys.stderr, flush=True)
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        if not address:        # the cluster this stage started: the setting is not the cause
            raise EngineError(f"the Dask cluster this stage started on this machine {state} "
                              f"(waited {WORKER_WAIT} s): its workers could not start or "
                              "closed (a worker closes on a task whose code it cannot "
                              "import); use the local engine, or a running cluster's "
                              "<engine_address>") from None
        raise EngineError(f"the Dask cluster at <engine_address> {address} {state} (waited "
                          f"{WORKER_WAIT} s); start one (`dask worker {address} --nthreads 1`, "
                          "in an environment with this project installed) or leave "
                          "<engine_address> empty for a cluster on this machine") from None


def _probe() -> Callable[[], dict[str, str]]:
    """The function behind :data:`PROBE`: nested, so that cloudpickle sends it to a worker by
    value (a worker without this project answers "missing" rather than failing to load it);
    it imports nothing but the standard library."""
    def versions() -> dict[str, str]:
        """This environment's versions that decide the field's forecasts: this project's (its
        ``__version__`` and a digest of its source files: another commit of the same version
        differs), numpy's, statsforecast's (installed, as pip sees them) and Python's."""
        import hashlib
        import importlib.metadata
        import importlib.util
        import platform
        import re
        from pathlib import Path

        def installed(name: str) -> str:
            try:
                return importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                return "missing"
        spec = importlib.util.find_spec("attn_forecast")
        project = "missing"
        if spec is not None and spec.submodule_search_locations:
            root = Path(list(spec.submodule_search_locations)[0])
            digest = hashlib.sha256()
            for f in sorted(root.rglob("*")):
                if f.suffix in (".py", ".yaml") and "__pycache__" not in f.parts:
                    digest.update(f.relative_to(root).as_posix().encode() + b"\0")
                    digest.update(f.read_bytes())
            found = re.search(r'__version__ = "([^"]+)"', (root / "__init__.py").read_text())
            project = (f"{found.group(1) if found else '?'} "
                       f"(source sha256 {digest.hexdigest()[:12]})")
        return {"attn_forecast": project, "numpy": installed("numpy"),
                "statsforecast": installed("statsforecast"),
                "python": platform.python_version()}
    return versions


PROBE = _probe()    # run here and, by ``client.run``, on every worker of a cluster at an address


def same_versions(answers: dict[str, dict], here: dict[str, str], address: str) -> None:
    """Return if every worker's :data:`PROBE` answer (``answers``: worker address -> its
    versions, as ``client.run`` gives them) is ``here``'s; else an :class:`EngineError` naming
    the first such worker (by address), what differs and what to do."""
    for worker in sorted(answers):
        theirs = answers[worker]
        differ = [f"{k} {theirs.get(k, 'missing')} (here {v})" for k, v in here.items()
                  if theirs.get(k) != v]
        if differ:
            raise EngineError(f"the Dask worker {worker} of the cluster at <engine_address> "
                              f"{address} runs other versions than this process: "
                              f"{', '.join(differ)}; install this project's same commit in "
                              "the workers' environment with the same constraints (`pip "
                              "install -c constraints.txt -e .`) and restart them")


def _threads(client) -> int:
    """The cluster's worker threads now (at least 1)."""
    return max(1, sum(client.nthreads().values()))


def _chunk(args: tuple) -> list:
    fn, tasks = args
    return [fn(t) for t in tasks]
