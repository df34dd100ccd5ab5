"""Where the dataset files live, and how they get there (``paddle.dataset.common``).

Every downloadable dataset keeps its files under ``DATA_HOME/<module>/``, with the file
names Paddle uses, so a cache that Paddle filled works here unchanged. ``DATA_HOME`` is
``~/.cache/paddle/dataset`` unless the environment variable ``FLUID_NB_DATA_HOME`` names
another folder when ``fluid_nb`` is imported; from Python, set
``paddle.dataset.common.DATA_HOME = "/some/folder"`` (every loader reads it when called).

To use a dataset on a machine without network, copy its files (same names) into
``DATA_HOME/<module>/``: :func:`download` accepts a file whose md5 is the one the module
declares and never touches the network then.
"""
import hashlib
import os
import tempfile
import urllib.request

from ...errors import InvalidArgument, NotFound, expected

__all__ = ["DATA_HOME", "DATA_HOME_ENV", "TIMEOUT", "DownloadFailed", "ChecksumMismatch",
           "md5file", "download"]

DATA_HOME_ENV = "FLUID_NB_DATA_HOME"
DATA_HOME = os.path.expanduser(os.environ.get(DATA_HOME_ENV) or "~/.cache/paddle/dataset")

# Seconds a network operation (connecting, each read) may take before the download is
# abandoned; a stalled server must not hang a notebook cell forever.
TIMEOUT = 30.0
_CHUNK = 1 << 16


class DownloadFailed(NotFound):
    """A dataset file is not in the cache and could not be downloaded."""


class ChecksumMismatch(InvalidArgument):
    """A downloaded dataset file does not have the md5 its module declares."""


def md5file(fname):
    """The hex md5 of a file's bytes."""
    digest = hashlib.md5()
    with open(fname, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_path(url, module_name, save_name=None):
    """Where :func:`download` keeps ``url``: ``DATA_HOME/module_name/<last part of url>``
    (or ``save_name``), as Paddle names it."""
    return os.path.join(DATA_HOME, module_name, save_name or url.split("/")[-1])


def download(url, module_name, md5sum, save_name=None, timeout=None):
    """The path of ``url``'s file in the cache, downloading it first if needed.

    A cached file whose md5 is ``md5sum`` is returned at once. Otherwise the file is
    fetched (each network operation limited to ``timeout`` seconds, default
    :data:`TIMEOUT`) into a temporary file next to its place, checked against ``md5sum``
    and only then renamed into place, so an interrupted or corrupt download never leaves a
    file that looks complete.

    Raises :class:`DownloadFailed` (a ``NotFound``) when the file is absent and cannot be
    fetched, and :class:`ChecksumMismatch` (an ``InvalidArgument``) when what was fetched
    has another md5; both name the file, the URL and the cache path to copy it to.
    """
    filename = cache_path(url, module_name, save_name)
    found = None
    if os.path.exists(filename):
        found = md5file(filename)
        if found == md5sum:
            return filename
    where = f"dataset {module_name}"
    what = f"file {os.path.basename(filename)} (md5 {md5sum})"
    remedy = (f"Download {url} yourself and put it at {filename} (or point "
              f"{DATA_HOME_ENV} / paddle.dataset.common.DATA_HOME at a folder holding "
              f"{module_name}/{os.path.basename(filename)}).")
    if found is not None:
        have = f"a file there with md5 {found}, and downloading {url} failed"
    else:
        have = f"no file there, and downloading {url} failed"
    try:
        _fetch(url, filename, md5sum, timeout if timeout is not None else TIMEOUT)
    except _WrongChecksum as e:
        raise ChecksumMismatch(
            expected(where, f"download of {url} into {filename}", f"md5 {md5sum}",
                     f"md5 {e.args[0]}; the download was discarded") + ". " + remedy) from None
    except OSError as e:  # URLError, timeouts and refused connections are OSErrors
        raise DownloadFailed(
            expected(where, what, f"at {filename}", f"{have} ({_reason(e)})")
            + ". " + remedy) from None
    return filename


class _WrongChecksum(Exception):
    pass


def _reason(error):
    reason = getattr(error, "reason", None) or error
    return f"{type(error).__name__}: {reason}"


def _fetch(url, filename, md5sum, timeout):
    """Stream ``url`` into a temporary file beside ``filename``; rename it into place only
    when its md5 is ``md5sum``. The temporary file is removed on every failure."""
    folder = os.path.dirname(filename)
    os.makedirs(folder, exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=folder, prefix=os.path.basename(filename) + ".",
                                   suffix=".part")
    try:
        digest = hashlib.md5()
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as src:
            for chunk in iter(lambda: src.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != md5sum:
            raise _WrongChecksum(digest.hexdigest())
        os.replace(partial, filename)
    except BaseException:
        if os.path.exists(partial):
            os.remove(partial)
        raise
