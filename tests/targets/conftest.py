from tests.targets.tally import TALLY


def pytest_terminal_summary(terminalreporter):
    """Per target: the (op, target) pairs and the cases compared with the interpreter, and
    the cases it declined (and the notes of the baseline check)."""
    if not TALLY.ran:
        return
    terminalreporter.section("targets against the interpreter")
    for line in TALLY.table() + TALLY.notes:
        terminalreporter.write_line(line)
