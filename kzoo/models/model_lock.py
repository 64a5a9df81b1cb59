"""One lock per model, held by the calls that swap its variables.

On JAX, Keras' ``predict``, ``evaluate`` and ``fit`` move every variable's
value out of the variable for the length of the call (the trainer's
stateless functions take the values as arguments) and put them back at the
end. A second thread calling the model in that window finds the variables
empty (``TypeError: 'NoneType' object is not callable``). Holding the
model's lock around those calls makes concurrent callers wait their turn;
one thread alone takes an uncontended lock, which costs well under a
microsecond.
"""

import functools
import threading
import weakref

_LOCKS = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def model_lock(model):
    """The re-entrant lock of ``model`` (created on first use; not an
    attribute, so it is never tracked, copied or serialized)."""
    with _LOCKS_LOCK:
        lock = _LOCKS.get(model)
        if lock is None:
            lock = _LOCKS[model] = threading.RLock()
        return lock


def locked(method):
    """Decorates a model method so that it runs holding ``model_lock``."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with model_lock(self):
            return method(self, *args, **kwargs)

    return wrapper
