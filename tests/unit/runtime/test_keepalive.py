"""A queue's KeepAlive holds issued commands until they complete, asking their backend
tokens at amortised sweeps, and lets go of what completed commands held."""
import gc
import weakref

from pysycl.runtime.event import STREAM, new_event
from pysycl.runtime.keepalive import KeepAlive


class _Token:
    def __init__(self, done=False, error=None):
        self.done, self.error, self.asked = done, error, 0

    def is_complete(self):
        self.asked += 1
        if self.error is not None:
            raise self.error
        return self.done


class _Held:
    """Stands for a host array a command refers to."""


def _command(token):
    ev = new_event(None, STREAM, None)
    ev._started = True
    held = _Held()
    ev._run = (lambda: held)   # the command's closure refers to its objects
    ev._token = token
    return ev, weakref.ref(held)


def test_completed_commands_let_go_and_running_ones_hold():
    keep = KeepAlive()
    running, finished = _Token(), _Token(done=True)
    refs = {}
    for i in range(300):
        ev, ref = _command(finished if i % 3 else running)
        refs[i] = ref
        keep.hold(ev)
        del ev
    keep.sweep()
    gc.collect()
    assert len(keep) == 100
    assert all((refs[i]() is None) == bool(i % 3) for i in refs)
    # One token shared by many launches is asked once per sweep.
    asked = finished.asked + running.asked
    keep.sweep()
    assert finished.asked + running.asked == asked + 1
    running.done = True
    keep.sweep()
    gc.collect()
    assert len(keep) == 0 and all(r() is None for r in refs.values())


def test_a_failed_token_completes_its_event_with_the_error():
    keep = KeepAlive()
    ev, ref = _command(_Token(error=RuntimeError("device lost")))
    keep.hold(ev)
    keep.sweep()
    assert len(keep) == 0 and ev._done
    assert isinstance(ev._error.error, RuntimeError)


def test_sweeps_are_amortised_while_the_device_is_behind():
    keep = KeepAlive()
    token = _Token()
    for _ in range(5000):
        keep.hold(_command(token)[0])
    # Sweeps happen as the held list doubles: a handful, not one per command.
    assert token.asked <= 8


class _FailingToken:
    def is_complete(self):
        raise RuntimeError("launch failed")   # (a new error each time, as a driver's)


def test_objects_held_with_a_stream_token_go_when_it_finishes():
    # Launches issued at once to one in-order stream share its token: their objects are
    # held with it, asked once per sweep, and let go of when it is found finished (a
    # failed token too: its error is the stream's, reported by waiting).
    keep = KeepAlive()
    stream, broken = _Token(), _FailingToken()
    refs = []
    for _ in range(200):
        held = _Held()
        refs.append(weakref.ref(held))
        keep.hold_objects(stream, [held])
        del held
    failed = _Held()
    failed_ref = weakref.ref(failed)
    keep.hold_objects(broken, [failed])
    del failed
    gc.collect()
    assert all(r() is not None for r in refs) and stream.asked >= 1
    asked = stream.asked
    keep.sweep()
    assert stream.asked == asked + 1           # one question for 200 launches
    assert all(r() is not None for r in refs)  # still running
    assert failed_ref() is None
    stream.done = True
    keep.sweep()
    gc.collect()
    assert all(r() is None for r in refs) and len(keep) == 0


def test_a_launch_loop_over_the_same_objects_holds_them_once():
    # Each launch's objects must stay alive until the stream token, asked after that
    # launch was issued, says it finished. The same objects held again with the same
    # token, while their entry is still held, need no second entry; anything else
    # (another object, another token, the entry swept away) does.
    keep = KeepAlive()
    stream = _Token()
    a, b = _Held(), _Held()
    for _ in range(1000):
        keep.hold_objects(stream, [a, b])
    assert len(keep) == 1 and stream.asked == 0
    keep.hold_objects(stream, [a])               # a different list of objects
    other = _Token()
    keep.hold_objects(other, [a])                # another token
    assert len(keep) == 3
    keep.sweep()                                  # nothing finished: all still held
    assert len(keep) == 3
    keep.hold_objects(stream, [a, b])            # the shared entry was taken by the sweep
    assert len(keep) == 4
    # A loop whose objects are new each time holds each, and still sweeps.
    refs = []
    for _ in range(300):
        c = _Held()
        refs.append(weakref.ref(c))
        keep.hold_objects(stream, [c])
        del c
    gc.collect()
    assert all(r() is not None for r in refs) and stream.asked >= 1
    stream.done = True
    keep.sweep()
    ref_a = weakref.ref(a)
    del a, b
    gc.collect()
    assert len(keep) == 1 and ref_a() is not None and all(r() is None for r in refs)
    other.done = True
    keep.sweep()
    gc.collect()
    assert len(keep) == 0 and ref_a() is None


def test_objects_stay_held_by_a_shared_entry_until_its_token_finished():
    keep = KeepAlive()
    stream = _Token()
    held = _Held()
    ref = weakref.ref(held)
    keep.hold_objects(stream, [held])
    keep.hold_objects(stream, [held])   # not held again: the entry holds it
    del held
    gc.collect()
    keep.sweep()
    gc.collect()
    assert ref() is not None
    stream.done = True
    keep.sweep()
    gc.collect()
    assert ref() is None and len(keep) == 0
