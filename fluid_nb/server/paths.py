"""Resolving a client-given path inside the server root, and nowhere else."""
import re
from pathlib import Path, PurePosixPath

from ..errors import InvalidArgument, expected


class PathOutsideRoot(InvalidArgument):
    """A path that is absolute, climbs with ``..`` or leads (through a link) out of the root."""


def resolve_in_root(root, relative):
    """The file ``relative`` (an API path: ``/``-separated, relative to ``root``) as an
    absolute path.

    Invariant: the result lies inside ``root`` after every symbolic link is followed;
    otherwise :class:`PathOutsideRoot` is raised (absolute paths and ``..`` parts are refused
    before touching the disk). An empty path is an :class:`InvalidArgument`.
    """
    where = "fluid-nb program path"
    if not relative or not relative.strip():
        raise InvalidArgument(expected(where, "path", "a file path relative to the server root",
                                       "an empty path"))
    posix = PurePosixPath(relative.replace("\\", "/"))
    if posix.is_absolute() or relative.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", relative):
        raise PathOutsideRoot(expected(where, "path", "a path relative to the server root",
                                       f"the absolute path {relative!r}"))
    if ".." in posix.parts:
        raise PathOutsideRoot(expected(where, "path", "a path inside the server root",
                                       f"{relative!r}, which climbs out with '..'"))
    root_path = Path(root).resolve()
    path = root_path.joinpath(*posix.parts).resolve()
    if path != root_path and root_path not in path.parents:
        raise PathOutsideRoot(expected(where, "path", "a file inside the server root",
                                       f"{relative!r}, which links to a place outside it"))
    return path
