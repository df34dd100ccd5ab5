"""Math layers of Fluid 1.8 beyond the elementwise ones: sign, where, cumsum, argsort, logsumexp, ..."""

__all__ = []
