"""What the modules of tenure.aio share: argument types, limits, helpers, `Pending`."""

from __future__ import annotations

import concurrent.futures
import datetime
import random
import threading
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Awaitable,
    Callable,
    Generator,
    Generic,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
)

import tenure

if TYPE_CHECKING:
    from ._container import Container, Lease

_T = TypeVar("_T")
_I = TypeVar("_I", tenure.Item, tenure.ItemProperties)

_Key = Union[str, bytes]
_Value = Union[bytes, bytearray, memoryview]
_Time = Union[datetime.datetime, int, float]
_Seconds = Union[int, float, datetime.timedelta]
_ETags = Union[str, Sequence[str]]
_LeaseIdArg = Union[str, tenure.Lease, "Lease"]
_LockHandleArg = Union[tenure.LockHandle, str]
_Metadata = Mapping[str, str]
_ContainerArg = Union[str, tenure.Container, "Container"]

#: Threads a store runs waiting calls on (writes with durability="sync", pages, ...).
EXECUTOR_THREADS = 32
#: A cancelled wait_for_changes gives its thread back within this many seconds.
WAIT_SLICE = 0.05
#: Changes and items pulled from the engine per page of an async iteration.
PAGE = 1000
#: How long `update()` keeps retrying lost races by default, in seconds.
UPDATE_TIMEOUT = 30.0


def _invalid(argument: str, reason: str) -> tenure.InvalidArgument:
    return tenure.InvalidArgument(
        f"InvalidArgument (400): argument `{argument}`: {reason}", argument=argument
    )


def _seconds(value: _Seconds, argument: str) -> float:
    """Seconds (int, float or timedelta) as a float, not negative."""
    if isinstance(value, datetime.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(
            f"argument `{argument}` must be seconds (int or float) or a timedelta, "
            f"not {type(value).__name__}"
        )
    if not seconds >= 0 or seconds == float("inf"):
        raise _invalid(argument, "must be a finite number of seconds, not negative")
    return seconds


def _backoff(attempt: int) -> float:
    """The jittered exponential backoff of `update()` after a lost race (at most ~13 ms)."""
    return random.uniform(0, 50e-6 * (1 << min(attempt, 8)))


def _native_container(container: _ContainerArg) -> Union[str, tenure.Container]:
    """A container argument for the blocking API: a `tenure.aio.Container` gives its `.sync`."""
    if isinstance(container, (str, tenure.Container)):
        return container
    return container.sync


def _closed() -> tenure.Closed:
    return tenure.Closed("Closed (500): the store was closed")



def _give_back(release: Callable[[_T], object], future: "concurrent.futures.Future[_T]") -> None:
    """Releases what a cancelled call was granted after all."""
    if future.cancelled() or future.exception() is not None:
        return
    try:
        release(future.result())
    except tenure.TenureError:
        pass  # already gone (expired, broken, the store closed)


def _release_quietly(lease: tenure.Lease) -> None:
    lease.release()


# ----- awaitable context managers -----


class Pending(Generic[_T]):
    """What `open()`, `Container.lease()` and `Container.lock()` return: await it for the
    object, or use it in ``async with`` to have the object closed, released or unlocked at
    the end of the block."""

    def __init__(self, make: Callable[[], Awaitable[_T]]) -> None:
        self._make = make
        self._value: Optional[_T] = None

    def __await__(self) -> Generator[Any, None, _T]:
        return self._make().__await__()

    async def __aenter__(self) -> _T:
        self._value = await self._make()
        return self._value

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc_value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        value: Any = self._value
        self._value = None
        if value is not None:
            await value.__aexit__(exc_type, exc_value, traceback)


class _WaitThreads:
    """Where waiting calls run (a waiting lease acquire, `wait_for_changes`): a daemon thread
    each. A wait the engine cannot interrupt — an acquire cancelled while its lease is still
    held elsewhere stays queued until it is granted (then released) or its `wait` runs out —
    then never holds up the interpreter's exit, as a pool's worker would."""

    def __init__(self) -> None:
        self._closed = False

    def submit(self, call: Callable[[], _T]) -> "concurrent.futures.Future[_T]":
        if self._closed:
            raise RuntimeError("the store was closed")
        future: "concurrent.futures.Future[_T]" = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = call()
            except BaseException as error:  # handed to the awaiting task
                future.set_exception(error)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="tenure-aio-wait", daemon=True).start()
        return future

    def shutdown(self, wait: bool = False) -> None:
        self._closed = True
