"""CPython's cyclic garbage collector waits while a program runs.

A run makes Python objects by the hundred per loop iteration (a tensor per op output, a
step scope and its values per ``while`` iteration) and frees them all by reference
counting: a run's values form no cycles that outlive it. The cyclic collector, though,
starts a pass whenever allocations outnumber deallocations by 700 (its generation 0
threshold), and a ``while`` loop's step scopes, kept for the backward pass, do exactly
that. Each pass then traverses the live step scopes and finds no garbage, and every few
hundred passes a full pass traverses every object of the process. Measured in W3
(DynamicRNN, forward and backward, 32 sequences): with step scopes that made a new LoD
list per tensor, 0.9 passes and about 0.12 ms of a 3.8 ms batch; with shared LoD lists
its batch of 5-50 steps stays under the threshold, while a batch of 50-150 steps makes two
passes, about 0.3 ms of 12.6 ms. The NumPy loop the benchmark compares with allocates
almost no container objects and pays none of it.

So ``Executor.run`` pauses the collector for the run (``gc.disable()``) and lets it go on
afterwards, when the run's objects are gone and its counts have fallen back. Reference
counting frees memory as before; only cycles made during the run (none by the executor)
wait for the first pass after it. The run that found the collector enabled enables it
again: a run nested in another leaves it to the outer one, and a collector the program
had disabled stays disabled. (Runs on two threads at once may end the pause early, which
costs only time.) ``FLUID_NB_COLLECTOR=always`` in the environment, read when fluid_nb is
imported, leaves the collector running during runs.
"""
import gc
import os

#: False when ``FLUID_NB_COLLECTOR=always`` asks for the collector to run during runs
PAUSING = os.environ.get("FLUID_NB_COLLECTOR", "").strip().lower() != "always"


def pause():
    """A run begins: disable the collector if it is running. Returns whether this call
    disabled it; pass that to ``resume``."""
    if PAUSING and gc.isenabled():
        gc.disable()
        return True
    return False


def resume(paused):
    """A run ends (also by an exception): re-enable the collector if ``pause`` disabled it."""
    if paused:
        gc.enable()
