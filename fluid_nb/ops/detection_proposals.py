"""Op family (filled in as its ops arrive)."""
