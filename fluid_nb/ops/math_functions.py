"""Math op family beyond math.py: elementwise functions, scans, sorting and searching."""
