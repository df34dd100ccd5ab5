"""Writing a model file so that a failure leaves the destination as it was.

The path is checked before any work (a string naming a file, not a directory, in a folder
that exists, with a name the file system takes); the bytes go to a hidden temporary file
beside the destination, which replaces it in one rename. Whatever fails, the temporary file
is removed and an existing file at the destination is untouched.
"""
import errno
import os
import secrets

from ...errors import InvalidArgument, InvalidType, NotFound, ResourceExhausted, expected

#: the longest file name most file systems take, in bytes
NAME_MAX = 255


def output_path(path, where):
    """``path`` as a str naming a file that can be created: InvalidType for what is not a
    path, InvalidArgument for an empty name, a NUL byte, a name too long or an existing
    directory, NotFound for a folder that does not exist."""
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str):
        raise InvalidType(expected(where, "path", "a str or os.PathLike file path",
                                   type(path).__name__))
    path = os.fspath(path)
    folder, name = os.path.split(path)
    if not name:
        raise InvalidArgument(expected(where, "path", "a file name",
                                       f"{path!r}, which names no file"))
    if "\0" in path:
        raise InvalidArgument(expected(where, "path", "no NUL byte", repr(path)))
    if len(os.fsencode(name)) > NAME_MAX:
        raise InvalidArgument(expected(where, "path", f"a file name of at most {NAME_MAX} "
                                       f"bytes", f"{len(os.fsencode(name))} bytes"))
    if os.path.isdir(path):
        raise InvalidArgument(expected(where, "path", "a file to write",
                                       f"{path!r}, an existing directory"))
    if not os.path.isdir(folder or "."):
        raise NotFound(expected(where, "path", "a file in an existing folder",
                                f"{path!r}, whose folder {folder!r} does not exist"))
    return path


def write_atomically(path, data, where):
    """Write ``data`` (bytes) to ``path`` (see :func:`output_path`) all at once: a reader of
    ``path`` sees the old file or the new one, never a part."""
    path = output_path(path, where)
    folder, name = os.path.split(path)
    partial = os.path.join(folder, f".{name[:64]}.{secrets.token_hex(6)}.part")
    try:
        # (O_EXCL: never write through a file or link someone put there; 0o666: the umask
        # decides, as for any file the user writes)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _typed(exc, path, where) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(partial, path)
    except BaseException as exc:
        try:
            os.unlink(partial)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _typed(exc, path, where) from None
        raise


def _typed(exc, path, where):
    """The typed error of an OSError met writing ``path``."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return ResourceExhausted(expected(where, f"path {path!r}", "room for the model",
                                          exc.strerror))
    return InvalidArgument(expected(where, f"path {path!r}", "a file it may write",
                                    exc.strerror or str(exc)))
