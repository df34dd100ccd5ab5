"""JupyterLab as ``fluid-nb lab`` runs it: Jupyter's own ``jupyter lab``, made to stop cleanly
on an interrupt (SIGINT) or SIGTERM whatever the server is doing at that moment.

Three things in Jupyter's own stop depend on timing, and each is fixed here:

- Jupyter installs an interrupt handler of its own (asking to confirm) only when its standard
  input is a terminal. Otherwise an interrupt is Python's ``KeyboardInterrupt``, raised
  wherever the event loop happens to be: when it lands in a request handler, tornado logs it
  as an uncaught exception (a traceback) and the server goes on serving. Jupyter's SIGTERM
  handler schedules the stop on the main thread instead, so an interrupt is handed to it. An
  interrupt ignored by whoever started the Lab (a background job) stays ignored, and a
  terminal still gets Jupyter's confirmation.
- Jupyter's SIGTERM handler stops the HTTP server at once, removing the listening sockets'
  readers from the event loop, at whatever point of the loop the signal lands. A reader the
  loop has just taken to run (a connection arriving) is then cancelled before it runs, and
  asyncio logs its empty callback as a TypeError traceback. The handler is run by the loop
  between callbacks instead (asyncio's own signal handling).
- When requests are being served as the loop stops, the AnyIO worker threads that served
  them wait for work that never comes, and being non-daemon threads they keep the process
  alive after Jupyter has shut down. Once Jupyter's own shutdown has returned (kernels,
  extensions and its runtime files cleaned up), the process ends without waiting for them.
"""
import logging
import os
import signal
import sys


def _stop_as_sigterm(signum, frame):
    signal.raise_signal(signal.SIGTERM)


def _stop_between_callbacks():
    """Jupyter's SIGTERM handler, once installed, handed to the event loop to run."""
    from jupyter_server.serverapp import ServerApp
    install = ServerApp.init_signal

    def init_signal(self):
        install(self)
        handler = signal.getsignal(signal.SIGTERM)
        loop = getattr(getattr(self, "io_loop", None), "asyncio_loop", None)
        if callable(handler) and loop is not None:
            loop.add_signal_handler(signal.SIGTERM, handler, signal.SIGTERM, None)
    ServerApp.init_signal = init_signal


def main(argv=None):
    """Run ``jupyter lab`` with ``argv`` (default: this process's arguments); never returns."""
    from jupyterlab.labapp import main as lab_main
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _stop_as_sigterm)
    _stop_between_callbacks()
    try:
        code = lab_main(argv)
    except SystemExit as exit:
        code = exit.code
    if isinstance(code, str):  # a message, as sys.exit prints it
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    main()
