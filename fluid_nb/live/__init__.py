"""Live mode: programs that run as they are written (see :mod:`.session`)."""
from .session import (LiveSession, disable_live, downstream_ops, enable_live, feed, is_live,  # noqa: F401
                      live, live_session, live_step)

__all__ = ["LiveSession", "live", "enable_live", "disable_live", "live_session", "feed",
           "live_step", "is_live"]
