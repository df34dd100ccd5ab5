"""``paddle.version``: what the installed framework is, in the fields Fluid 1.8 records.

The version is the Fluid API release fluid_nb implements (``fluid_nb.FLUID_VERSION``), kept
as strings the way Paddle writes them. ``istaged`` is False: fluid_nb is not a build of a
tagged Paddle source tree, so ``show()`` prints the commit of the source fluid_nb runs from
(read from its git checkout; ``'Unknown'`` when there is none, as Paddle writes then).
``mkl()`` is ``'OFF'``: the kernels run on NumPy/CuPy, not on Intel MKL.
"""
import os

from ... import FLUID_VERSION

__all__ = ["full_version", "major", "minor", "patch", "rc", "istaged", "commit", "with_mkl",
           "show", "mkl"]


def _source_commit():
    """The commit of the git checkout holding this package, or 'Unknown'."""
    here = os.path.abspath(__file__)  # <root>/fluid_nb/api/paddle/version.py
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(here))))
    git = os.path.join(root, ".git")
    try:
        if os.path.isfile(git):  # a worktree: ".git" names the real folder
            with open(git) as f:
                git = os.path.join(root, f.read().split(":", 1)[1].strip())
        with open(os.path.join(git, "HEAD")) as f:
            head = f.read().strip()
        if not head.startswith("ref:"):
            return head
        ref = head[4:].strip()
        common = os.path.join(git, "commondir")  # a worktree keeps its refs in the main one
        if os.path.isfile(common):
            with open(common) as f:
                git = os.path.join(git, f.read().strip())
        ref_file = os.path.join(git, ref)
        if os.path.isfile(ref_file):
            with open(ref_file) as f:
                return f.read().strip()
        with open(os.path.join(git, "packed-refs")) as f:
            for line in f:
                if line.rstrip().endswith(" " + ref):
                    return line.split()[0]
    except (OSError, IndexError):
        pass
    return "Unknown"


_parts = (FLUID_VERSION.split(".") + ["0", "0"])[:3]

full_version = FLUID_VERSION
major = _parts[0]
minor = _parts[1]
patch = _parts[2]
rc = "0"
istaged = False
commit = _source_commit()
with_mkl = "OFF"


def show():
    """Print the version fields (a tagged build) or the source commit (any other build)."""
    if istaged:
        print("full_version:", full_version)
        print("major:", major)
        print("minor:", minor)
        print("patch:", patch)
        print("rc:", rc)
    else:
        print("commit:", commit)


def mkl():
    """'ON' when the framework was built with Intel MKL; fluid_nb's is 'OFF'."""
    return with_mkl
