"""Host memory a run frees stays with the process: the next run reuses it without
page-faulting it in again (as Paddle's allocator keeps its chunks)."""
import json
import os
import platform
import subprocess
import sys

# In a fresh interpreter: make an executor, then twice build up 96 MiB in 64 KiB arrays
# (each below glibc's mmap threshold, so they come from the heap) and free it all, as a
# DynamicRNN run does with its step scopes. Report the page faults of the second round.
# 96 MiB is above any trim threshold glibc's own dynamic policy sets (at most 64 MiB).
_ROUNDS = """
import json, resource
import numpy as np
import fluid_nb as fluid
from fluid_nb.exec.host_memory import keep_freed_memory
fluid.Executor(fluid.CPUPlace())
applied = keep_freed_memory()  # already done by the executor: says what it did
def round_trip():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(16384, "float32") for _ in range(1536)]
    del arrays
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
round_trip()
print(json.dumps({"applied": applied, "faults": round_trip()}))
"""

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _second_round(policy):
    env = dict(os.environ)
    env.pop("FLUID_NB_HOST_MEMORY", None)
    if policy is not None:
        env["FLUID_NB_HOST_MEMORY"] = policy
    out = subprocess.run([sys.executable, "-c", _ROUNDS], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_memory_freed_by_a_run_is_reused_without_page_faults():
    kept = _second_round(None)
    # the policy is glibc's mallopt: another C library is left as it is
    assert kept["applied"] is GLIBC
    if not GLIBC:
        return
    # 96 MiB is 24576 pages; reused heap memory faults (almost) none of them
    assert kept["faults"] < 1000, kept


def test_system_policy_leaves_glibc_returning_memory():
    # the effect the policy removes: glibc trims the freed heap top, so the same 96 MiB
    # page-faults in again
    returned = _second_round("system")
    assert returned["applied"] is False
    if not GLIBC:
        return
    assert returned["faults"] > 12000, returned
