"""Reader decorators (``paddle.reader`` / ``fluid.io``): a reader is a function returning
an iterable of samples; a decorator takes readers and returns a new reader.

    train = fluid.io.batch(fluid.io.shuffle(reader, buf_size=500), batch_size=64)
    for minibatch in train(): ...
"""
import itertools
import math
import queue
import random
import threading

from ...errors import InvalidArgument, expected

__all__ = ["batch", "BatchSizeTypeError", "cache", "map_readers", "shuffle", "chain", "compose", "buffered",
           "firstn", "xmap_readers", "multiprocess_reader", "ComposeNotAligned"]


class ComposeNotAligned(ValueError):
    """compose(): the readers ran out at different lengths."""


class BatchSizeTypeError(InvalidArgument, TypeError):
    """batch(): ``batch_size`` is not a number (Paddle raises TypeError here)."""


def batch(reader, batch_size, drop_last=False):
    """Group samples into lists of ``batch_size`` (the last one shorter unless
    ``drop_last``).

    ``batch_size`` is taken through ``int()`` as Paddle takes it; one that is not a
    number raises :class:`BatchSizeTypeError` (also a ``TypeError``), one that does not
    convert or is not positive raises ``InvalidArgument`` (also a ``ValueError``), at
    once rather than when the reader is first read."""
    try:
        size = int(batch_size)
    except TypeError:
        raise BatchSizeTypeError(expected("batch", "batch_size", "a positive int",
                                          repr(batch_size))) from None
    except ValueError:
        raise InvalidArgument(expected("batch", "batch_size", "a positive int",
                                       repr(batch_size))) from None
    if size <= 0:
        raise InvalidArgument(expected("batch", "batch_size", "a positive int",
                                       repr(batch_size)))
    batch_size = size

    def batch_reader():
        samples = iter(reader())
        # (each group taken in one islice: a Python append per sample was most of the
        # decorator's time)
        while True:
            group = list(itertools.islice(samples, batch_size))
            if len(group) < batch_size:
                if group and not drop_last:
                    yield group
                return
            yield group
    return batch_reader


def cache(reader):
    """Read everything once, then replay it from memory."""
    everything = list(reader())

    def cached():
        yield from everything
    return cached


def map_readers(func, *readers):
    """``func(*samples)`` over readers read in step (stops at the shortest)."""
    def reader():
        yield from map(func, *[r() for r in readers])
    return reader


def shuffle(reader, buf_size):
    """Shuffle within a window of ``buf_size`` samples."""
    def shuffled():
        # windows of buf_size samples (the last one shorter; at least one), each shuffled
        size = max(math.ceil(buf_size), 1)
        samples = iter(reader())
        while True:
            window = list(itertools.islice(samples, size))
            if not window:
                return
            random.shuffle(window)
            yield from window
    return shuffled


def chain(*readers):
    """One reader after the other."""
    def chained():
        yield from itertools.chain(*[r() for r in readers])
    return chained


def compose(*readers, **kwargs):
    """Samples of several readers joined into one flat tuple:
    ``(1, 2)`` and ``3`` give ``(1, 2, 3)``. With ``check_alignment`` (default) readers
    of different lengths raise ComposeNotAligned; otherwise the shortest wins."""
    check_alignment = kwargs.pop("check_alignment", True)
    if kwargs:
        raise InvalidArgument(f"compose: keyword arguments expected only check_alignment, "
                              f"but received {sorted(kwargs)}")

    def as_tuple(x):
        return x if isinstance(x, tuple) else (x,)

    def composed():
        its = [r() for r in readers]
        if not check_alignment:
            for outputs in zip(*its):
                yield sum((as_tuple(o) for o in outputs), ())
            return
        end = object()
        for outputs in itertools.zip_longest(*its, fillvalue=end):
            if any(o is end for o in outputs):
                raise ComposeNotAligned("compose: readers expected the same number of "
                                        "samples, but one ended before the others")
            yield sum((as_tuple(o) for o in outputs), ())
    return composed


def buffered(reader, size):
    """Read ahead up to ``size`` samples in a background thread."""
    end = object()

    def fill(it, q):
        for sample in it:
            q.put(sample)
        q.put(end)

    def buffered_reader():
        q = queue.Queue(maxsize=size)
        thread = threading.Thread(target=fill, args=(reader(), q), daemon=True)
        thread.start()
        while True:
            sample = q.get()
            if sample is end:
                return
            yield sample
    return buffered_reader


def firstn(reader, n):
    """The first ``n`` samples."""
    def reader_n():
        yield from itertools.islice(reader(), n)
    return reader_n


def xmap_readers(mapper, reader, process_num, buffer_size, order=False):
    """``mapper(sample)`` over a reader with ``process_num`` worker threads; ``order=True``
    keeps the input order."""
    end = object()

    def xreader():
        in_q = queue.Queue(buffer_size)
        out_q = queue.Queue(buffer_size)

        def read():
            for i, sample in enumerate(reader()):
                in_q.put((i, sample))
            for _ in range(process_num):
                in_q.put(end)

        def work():
            while True:
                item = in_q.get()
                if item is end:
                    out_q.put(end)
                    return
                i, sample = item
                out_q.put((i, mapper(sample)))

        threads = [threading.Thread(target=read, daemon=True)]
        threads += [threading.Thread(target=work, daemon=True) for _ in range(process_num)]
        for t in threads:
            t.start()
        finished, pending, next_index = 0, {}, 0
        while finished < process_num:
            item = out_q.get()
            if item is end:
                finished += 1
                continue
            if not order:
                yield item[1]
                continue
            pending[item[0]] = item[1]
            while next_index in pending:
                yield pending.pop(next_index)
                next_index += 1
    return xreader


def multiprocess_reader(readers, use_pipe=True, queue_size=1000):
    """Samples of several readers, interleaved as they come (threads stand in for
    processes here)."""
    end = object()

    def merged():
        q = queue.Queue(queue_size)

        def run(r):
            for sample in r():
                q.put(sample)
            q.put(end)

        for r in readers:
            threading.Thread(target=run, args=(r,), daemon=True).start()
        finished = 0
        while finished < len(readers):
            sample = q.get()
            if sample is end:
                finished += 1
            else:
                yield sample
    return merged
